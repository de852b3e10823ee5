#!/usr/bin/env python3
"""An export grown to SIZE memories for the benchmarks: variants of the exported records (new ids,
no metadata, "(variant N of note M)" appended), written as an export file to import.

Usage: grow_store.py EXPORT_JSON SIZE > GROWN_JSON   (SIZE counts the exported records too)
"""
import json
import sys
import uuid

doc = json.load(open(sys.argv[1]))
base = doc["records"]
want = int(sys.argv[2]) - len(base)
grown = []
for i in range(max(want, 0)):
    r = dict(base[i % len(base)])
    r["id"] = str(uuid.uuid4())
    r["metadata"] = {}
    r["content"] = f"{r['content']} (variant {i // len(base) + 1} of note {i % len(base)})"
    grown.append(r)
doc["records"] = grown
doc["count"] = len(grown)
json.dump(doc, sys.stdout)
