# NvccOpt.cmake: compile chosen CUDA targets through the nvcc-opt compiler launcher.
#
# Usage (`nvcc-opt cmake-dir` prints this file's folder in any installation):
#   execute_process(COMMAND nvcc-opt cmake-dir OUTPUT_VARIABLE dir OUTPUT_STRIP_TRAILING_WHITESPACE)
#   list(APPEND CMAKE_MODULE_PATH "${dir}")   # or cmake -DCMAKE_MODULE_PATH="$(nvcc-opt cmake-dir)"
#   include(NvccOpt)
#   nvcc_opt_enable(my_app my_kernels)   # these targets
#   nvcc_opt_enable_all()                # or: every target with CUDA sources defined so far
#                                        # in this directory and the ones below it
#
# Call them after the targets (and their sources) are defined. The launcher of each target
# becomes `nvcc-opt` followed by any launcher it already had: `ccache` becomes `nvcc-opt;ccache`.
# nvcc-opt must come first: ccache in front of it takes nvcc as an input file and stops caching.
#
# NVCC_OPT_EXECUTABLE (cache variable): the nvcc-opt program, by absolute path (so builds work
# from shells where its virtual environment is not active); when unset, the script of the
# installation this file came from (beside its site-packages), else an active virtual
# environment's, else PATH's. When it is not found, configuring warns and the targets build
# without nvcc-opt: this module never fails a configure.
#
# Without this module, the same launcher for every CUDA target is one option (by absolute path):
#   cmake -DCMAKE_CUDA_COMPILER_LAUNCHER="$(command -v nvcc-opt);ccache" ...

include_guard(GLOBAL)

# Installed by pip, this file is <prefix>/lib/pythonX.Y/site-packages/nvcc_opt/cmake/ and the
# installation's own script <prefix>/bin/nvcc-opt (a virtual environment, ~/.local, /usr/local).
set(_nvcc_opt_installed "")
if(CMAKE_CURRENT_LIST_DIR MATCHES "/(site|dist)-packages/nvcc_opt/cmake$")
  get_filename_component(_nvcc_opt_installed "${CMAKE_CURRENT_LIST_DIR}/../../../../.." ABSOLUTE)
endif()
find_program(NVCC_OPT_EXECUTABLE nvcc-opt
  HINTS ${_nvcc_opt_installed} ENV VIRTUAL_ENV
  PATH_SUFFIXES bin
  DOC "The nvcc-opt compiler launcher")
unset(_nvcc_opt_installed)

# Is `item` (one launcher list entry) nvcc-opt?
function(_nvcc_opt_is_launcher item out)
  get_filename_component(name "${item}" NAME_WE)
  if(name STREQUAL "nvcc-opt" OR item STREQUAL NVCC_OPT_EXECUTABLE)
    set(${out} TRUE PARENT_SCOPE)
  else()
    set(${out} FALSE PARENT_SCOPE)
  endif()
endfunction()

# Sets `out` to the position of nvcc-opt in the launcher list `launcher`, or -1.
function(_nvcc_opt_position launcher out)
  set(position -1)
  set(index 0)
  foreach(item IN LISTS launcher)
    _nvcc_opt_is_launcher("${item}" is_it)
    if(is_it AND position EQUAL -1)
      set(position ${index})
    endif()
    math(EXPR index "${index} + 1")
  endforeach()
  set(${out} ${position} PARENT_SCOPE)
endfunction()

# A launcher in front of nvcc-opt would see nvcc-opt as its compiler (ccache stops caching).
_nvcc_opt_position("${CMAKE_CUDA_COMPILER_LAUNCHER}" _nvcc_opt_at)
if(_nvcc_opt_at GREATER 0)
  message(WARNING
    "nvcc-opt: CMAKE_CUDA_COMPILER_LAUNCHER is \"${CMAKE_CUDA_COMPILER_LAUNCHER}\": a launcher "
    "before nvcc-opt sees nvcc-opt as the compiler (ccache stops caching). Put nvcc-opt first: "
    "-DCMAKE_CUDA_COMPILER_LAUNCHER=\"nvcc-opt;ccache\".")
endif()
unset(_nvcc_opt_at)

# Puts nvcc-opt in front of each target's CUDA launcher, the launchers it had after it (an
# nvcc-opt already in the list, in any place, moves to the front).
function(nvcc_opt_enable)
  if(NOT NVCC_OPT_EXECUTABLE OR NOT EXISTS "${NVCC_OPT_EXECUTABLE}")
    message(WARNING
      "nvcc-opt: executable not found (NVCC_OPT_EXECUTABLE=\"${NVCC_OPT_EXECUTABLE}\"); "
      "building ${ARGN} without it. Install nvcc-opt or set -DNVCC_OPT_EXECUTABLE=<path>.")
    return()
  endif()
  foreach(target IN LISTS ARGN)
    if(NOT TARGET ${target})
      message(WARNING "nvcc-opt: nvcc_opt_enable(${target}): no such target")
      continue()
    endif()
    get_target_property(launcher ${target} CUDA_COMPILER_LAUNCHER)
    if(NOT launcher)
      set(launcher "")
    endif()
    set(others "")
    foreach(item IN LISTS launcher)
      _nvcc_opt_is_launcher("${item}" is_it)
      if(NOT is_it)
        list(APPEND others "${item}")
      endif()
    endforeach()
    set_property(TARGET ${target}
      PROPERTY CUDA_COMPILER_LAUNCHER "${NVCC_OPT_EXECUTABLE}" ${others})
  endforeach()
endfunction()

# Appends to `out` the targets defined in `dir` and the directories below it that compile CUDA.
function(_nvcc_opt_cuda_targets dir out)
  set(found ${${out}})
  get_property(targets DIRECTORY "${dir}" PROPERTY BUILDSYSTEM_TARGETS)
  foreach(target IN LISTS targets)
    get_target_property(type ${target} TYPE)
    if(type STREQUAL "INTERFACE_LIBRARY" OR type STREQUAL "UTILITY")
      continue()
    endif()
    get_target_property(sources ${target} SOURCES)
    foreach(source IN LISTS sources)
      get_source_file_property(language "${source}" TARGET_DIRECTORY ${target} LANGUAGE)
      if(source MATCHES "\\.cu$" OR language STREQUAL "CUDA")
        list(APPEND found ${target})
        break()
      endif()
    endforeach()
  endforeach()
  get_property(subdirs DIRECTORY "${dir}" PROPERTY SUBDIRECTORIES)
  foreach(subdir IN LISTS subdirs)
    _nvcc_opt_cuda_targets("${subdir}" found)
  endforeach()
  set(${out} ${found} PARENT_SCOPE)
endfunction()

# nvcc_opt_enable() for every target with CUDA sources in this directory tree.
function(nvcc_opt_enable_all)
  set(targets "")
  _nvcc_opt_cuda_targets("${CMAKE_CURRENT_SOURCE_DIR}" targets)
  if(targets)
    nvcc_opt_enable(${targets})
  endif()
endfunction()
