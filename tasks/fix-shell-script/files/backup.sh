#!/bin/sh
# Copy every .txt file from data/ into backup/ and say how many were copied.
mkdir -p backup
count=0
for f in data/*.text; do
    cp "$f" backup/
    count=$((count + 1))
done
echo "backed up $count files"
