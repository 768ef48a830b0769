#!/usr/bin/env bash
# docs/issue53/quickstart-seeds.sh OUT SEED...: the README's first command once a seed, each in a
# fresh workspace OUT/seed-N, then whether its fizzbuzz.py prints the right 20 lines.
#
# How docs/results.md's "The first command (issue 53)" was measured (run from the clone; CHECK=""
# runs the command without its check, as the README had it before). One TSV line a seed on stdout
# and in OUT/summary.tsv: seed, right (yes/no), exit code, seconds, generated tokens, turns; the
# run's transcript is OUT/seed-N.jsonl. Left out on purpose: starting the server (scripts/quickstart
# does, or reuses the one on OPENAI_BASE_URL's port), and any retry.
set -uo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
out=$1; shift
mkdir -p "$out"
CHECK="${CHECK-python3 fizzbuzz.py | grep -qx FizzBuzz}"
expected=$(python3 -c "print('\n'.join('FizzBuzz' if i % 15 == 0 else 'Fizz' if i % 3 == 0 else 'Buzz' if i % 5 == 0 else str(i) for i in range(1, 21)))")
for seed in "$@"; do
    ws="$out/seed-$seed"; rm -rf "$ws"; mkdir -p "$ws"
    start=$(date +%s.%N)
    ( cd "$out" && TOOLOOP_SEED=$seed TOOLOOP_WORKSPACE="$ws" TOOLOOP_TRANSCRIPT="$out/seed-$seed.jsonl" \
        "$repo/scripts/quickstart" ${CHECK:+--check "$CHECK"} "Write fizzbuzz.py that prints FizzBuzz for 1..20, then run it" \
        >"$out/seed-$seed.out" 2>"$out/seed-$seed.err" ); code=$?
    end=$(date +%s.%N)
    got=$(cd "$ws" && timeout 10 python3 fizzbuzz.py 2>/dev/null)
    right=no; [ "$got" = "$expected" ] && right=yes
    counts=$(python3 -c "
import json, sys
end = [e for e in map(json.loads, open(sys.argv[1])) if e['event'] == 'end']
totals = end[-1]['totals'] if end else {}
print(totals.get('completion_tokens', '?'), totals.get('turns', '?'), sep='\t')" "$out/seed-$seed.jsonl")
    printf '%s\t%s\t%s\t%.1f\t%s\n' "$seed" "$right" "$code" "$(echo "$end - $start" | bc)" "$counts" | tee -a "$out/summary.tsv"
done
