#!/bin/sh
# Set up a development checkout.
python3 -m venv .venv
. .venv/bin/activate
pip install -e .
