#!/usr/bin/env bash
# Assemble a RAJAPerf checkout at the versions integration/rajaperf was checked against
# (RAJAPerf develop 9af20b3 with RAJA 378199a, blt 9ff7734, camp d580fd8) from local git mirrors
# of LLNL/RAJAPerf, LLNL/RAJA, LLNL/blt and LLNL/camp, without the docs, CI files and scripts
# (what a build does not read), for a device machine that cannot clone. Development tooling:
# a user runs `git clone --recursive` instead.
# Usage: scripts/rajaperf_from_mirrors.sh MIRRORS_DIR DEST   (MIRRORS_DIR/LLNL+RAJAPerf/repo ...)
set -euo pipefail
M="$1"; D="$2"
take() {  # take REPO COMMIT DEST PATH...: the named paths of one commit
  local repo="$1" commit="$2" dest="$3"; shift 3
  mkdir -p "$dest"
  git -C "$M/LLNL+$repo/repo" archive "$commit" -- "$@" | tar -x -C "$dest"
}
rm -rf "$D"
take RAJAPerf 9af20b3f "$D" CMakeLists.txt LICENSE NOTICE README.md RELEASE src test .gitmodules
take blt 9ff77344f0b2a6ee345e452bddd6bfd46cbbfa35 "$D/blt" SetupBLT.cmake cmake thirdparty_builtin LICENSE
take RAJA 378199aac342ee21c2ddfbcbb48413bd1dfac612 "$D/tpl/RAJA" CMakeLists.txt LICENSE NOTICE \
  README.md RELEASE cmake include src share .gitmodules
take blt 9ff77344f0b2a6ee345e452bddd6bfd46cbbfa35 "$D/tpl/RAJA/blt" SetupBLT.cmake cmake thirdparty_builtin LICENSE
take camp d580fd8feb10ddb7a63a784b4afcd857ac686e39 "$D/tpl/RAJA/tpl/camp" CMakeLists.txt LICENSE \
  NOTICE README.md cmake include src extern scripts
du -sh "$D"
