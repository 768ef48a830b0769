#!/bin/sh
# Usage: sh linecount.sh DIR
# Print the total number of lines in all the .log files in DIR.
total=0
for f in "$1"/*.log; do
    n=$(wc -l < "$f")
    total=$((total + n))
done
echo "total lines: $total"
