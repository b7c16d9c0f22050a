"""`nvcc-opt report`: one self-contained HTML file with the paper's figures and tables.

inputs.py and lulesh.py read what the user names (bench reports, a traces folder, a store, a
LULESH table) and turn bad input into one line naming the file; gathered.py holds them and joins
runs to traces and reports to the tools they offered; runs.py and traces.py compute what the
figures show (pure); figures.py draws them with matplotlib as inline SVG; figure_sections.py and
table_sections.py make the page's sections, page.py the HTML, whose own script checks that every
figure has data; build.py joins them; cli.py is the click command.
"""
