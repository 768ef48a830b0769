"""Print a small floor plan report."""

import geometry
from report import describe

rooms = [("kitchen", 3, 4), ("hall", 2, 5), ("office", 4, 4)]
for name, width, height in rooms:
    print(describe(name, width, height))
print("total:", sum(geometry.rectangle_area(width, height) for _, width, height in rooms), "m2")
