"""`nvcc-opt bench`: the suite bench (every suite app optimized N times in fresh copies,
`suite.py`), its results, summary and report files, and the merge of reports of suite slices
(`merge.py`)."""
