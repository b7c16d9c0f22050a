// Kernel names as the channel reports them: the base name of a demangled signature. Pure, so that
// tests/test_runtime_names.py compiles it on any machine.
#pragma once

#include <string>

namespace nvcc_opt {

// "ns::k<4>(float const*, int)" -> "k"; "(anonymous namespace)::k(float*)" -> "k";
// "void ns::k<(int)4>(float*)" -> "k". The parameter list is the parenthesised group that ends
// the signature (a scope such as "(anonymous namespace)" also has parentheses, so the first '('
// is not it); a name with no parameter list (a mangled name the demangler refused) is kept whole.
inline std::string base_name(const std::string& signature)
{
    size_t end = signature.size();
    if (end > 0 && signature[end - 1] == ')') {
        int depth = 0;
        for (size_t i = end; i-- > 0;) {
            if (signature[i] == ')') {
                ++depth;
            } else if (signature[i] == '(' && --depth == 0) {
                end = i;
                break;
            }
        }
    }
    std::string plain;
    int angle = 0;
    int paren = 0;
    for (size_t i = 0; i < end; ++i) {
        char c = signature[i];
        if (c == '<') {
            ++angle;
        } else if (c == '>') {
            --angle;
        } else if (angle == 0 && c == '(') {
            ++paren;  // "(anonymous namespace)": a scope, dropped with the "::" after it
        } else if (angle == 0 && c == ')') {
            --paren;
        } else if (angle == 0 && paren == 0) {
            plain += c;
        }
    }
    size_t colon = plain.rfind("::");
    plain = colon == std::string::npos ? plain : plain.substr(colon + 2);
    size_t space = plain.rfind(' ');  // a return type in front (templates)
    return space == std::string::npos ? plain : plain.substr(space + 1);
}

}  // namespace nvcc_opt
