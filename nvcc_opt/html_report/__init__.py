"""`nvcc-opt report`: one self-contained HTML file with the paper's figures and tables.

inputs.py reads what the user names (bench reports, a traces folder, a store, a LULESH table)
and turns bad input into one line naming the file; runs.py and traces.py compute what the
figures show (pure); figures.py draws them with matplotlib as inline SVG; page.py writes the
HTML, whose own script checks that every figure has data; build.py joins them.
"""
