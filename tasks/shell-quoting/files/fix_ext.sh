#!/bin/sh
# Rename every photos/*.JPG to the same name ending in .jpg, and say how many were renamed.
count=0
for f in photos/*.JPG; do
    mv $f ${f%.JPG}.jpg
    count=$((count + 1))
done
echo "renamed $count files"
