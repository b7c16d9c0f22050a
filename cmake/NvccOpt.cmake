# NvccOpt.cmake in a source checkout of nvcc-opt: the module itself ships inside the Python
# package (nvcc_opt/cmake/NvccOpt.cmake, installed by `pip install`; `nvcc-opt cmake-dir` prints
# its folder), so both paths load the same file:
#   list(APPEND CMAKE_MODULE_PATH /path/to/nvcc-opt/cmake)   # this checkout
#   list(APPEND CMAKE_MODULE_PATH "<output of nvcc-opt cmake-dir>")   # any installation
#   include(NvccOpt)
include("${CMAKE_CURRENT_LIST_DIR}/../nvcc_opt/cmake/NvccOpt.cmake")
