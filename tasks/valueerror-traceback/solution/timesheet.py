"""Add up the hours in a timesheet: one line per day, `DATE HOURS`."""

import sys


def read_hours(path):
    days = []
    with open(path) as f:
        for line in f:
            if line.strip():
                date, hours = line.split()
                days.append((date, float(hours)))
    return days


days = read_hours(sys.argv[1])
total = sum(hours for _, hours in days)
print(f"days: {len(days)}")
print(f"total: {total:.2f} h")
