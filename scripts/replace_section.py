#!/usr/bin/env python3
"""Replace the text between `<!-- NAME:begin -->` and `<!-- NAME:end -->` in FILE
with the contents of TABLE (which carries the markers itself); print TABLE when
FILE has no such markers. Used by bench.sh and cp_scaling.sh."""
import re
import sys

name, table_path, file_path = sys.argv[1:4]
table = open(table_path).read().strip()
try:
    text = open(file_path).read()
except FileNotFoundError:
    text = ""
pattern = re.compile(r"<!-- %s:begin -->.*?<!-- %s:end -->" % (re.escape(name), re.escape(name)), re.S)
if pattern.search(text):
    open(file_path, "w").write(pattern.sub(lambda _: table, text))
else:
    print(table)
