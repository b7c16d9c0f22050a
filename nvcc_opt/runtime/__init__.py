"""nvcc-opt's own measurement channel inside the application's processes (`channel.cpp`).

`build.py` compiles the injection library once per machine and CUPTI; `report.py` reads what it
wrote. The verification uses it for times and launch counts the candidate's code cannot write
(verify/corroborate.py) and for the runtime state check (verify/state.py).
"""
