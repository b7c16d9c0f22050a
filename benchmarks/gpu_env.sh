# Sourced by gpu_session.sh and gpu_verify.sh on the GPU machine, from the repository root: the
# wheels that machine lacks (carried in .whl/) into /tmp/site, an `nvcc-opt` shim in /tmp/bin
# (pip's install is not there), both on the paths.
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH="/tmp/site:$PWD" PYTHONUNBUFFERED=1
mkdir -p /tmp/bin
printf '#!%s\nfrom nvcc_opt.entry import main\nmain()\n' "$(command -v python3)" >/tmp/bin/nvcc-opt
chmod +x /tmp/bin/nvcc-opt
export PATH="/tmp/bin:$PATH"
