#!/usr/bin/env python3
"""Summarises Nsight Compute's per-instruction page of one kernel, as
written by `ncu --import R --page source --print-source sass --csv`:
instructions executed and stall samples by opcode and by stall reason
(long_sb: waiting for a memory load; wait: a fixed latency; ...); the
stretches of code whose instructions all ran equally often (a loop body or
one phase of it shows as one stretch: where the instructions of a phase
go); the most stalled instructions.  Usage: ncu_summary.py FILE.csv[.gz] [MIN_COUNT]"""
import collections
import csv
import gzip
import sys


def number(text):
    try:
        return float(text.replace(',', ''))
    except ValueError:
        return 0.0


def read(path):
    opener = gzip.open if path.endswith('.gz') else open
    with opener(path, 'rt') as f:
        rows = list(csv.reader(f))
    head = next(i for i, r in enumerate(rows)
                if 'Source' in r and any(c.startswith('Instructions Executed') for c in r))
    h = rows[head]
    src = h.index('Source')
    executed = next(i for i, c in enumerate(h) if c.startswith('Instructions Executed'))
    stalls = next((i for i, c in enumerate(h) if c.startswith('Warp Stall Sampling (All')), None)
    reasons = [(i, c) for i, c in enumerate(h) if c.startswith('stall_') and '(Not Issued)' not in c]
    by_reason = collections.Counter()
    out = []
    for r in rows[head + 1:]:
        if len(r) <= executed:
            continue
        text = r[src].strip()
        words = text.split()
        op = (words[1] if words and words[0].startswith('@') and len(words) > 1 else
              words[0] if words else '').split('.')[0]
        out.append((op, number(r[executed]), number(r[stalls]) if stalls is not None else 0.0, text))
        for i, c in reasons:
            by_reason[c[len('stall_'):]] += number(r[i]) if i < len(r) else 0.0
    return out, by_reason


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    code, by_reason = read(sys.argv[1])
    min_count = float(sys.argv[2]) if len(sys.argv) == 3 else 10000
    by_op, stall_op = collections.Counter(), collections.Counter()
    for op, n, s, _ in code:
        by_op[op] += n
        stall_op[op] += s
    total, total_stall = sum(by_op.values()), sum(stall_op.values())
    print('instructions executed (warp level) %d, stall samples %d' % (total, total_stall))
    for op, n in by_op.most_common(25):
        print('  %-8s %12d %5.1f%%   stall samples %7d' % (op, n, 100 * n / max(total, 1), stall_op[op]))
    print('stall samples by reason: ' +
          ', '.join('%s %d' % (k, v) for k, v in by_reason.most_common() if v > 0))
    print('stretches run at least %d times: first-last instruction, times run, size, stall samples' % min_count)
    start = 0
    for i in range(1, len(code) + 1):
        if i == len(code) or code[i][1] != code[start][1]:
            if code[start][1] >= min_count:
                s = sum(c[2] for c in code[start:i])
                print('  %5d-%5d %10d %5d %7d' % (start, i - 1, code[start][1], i - start, s))
            start = i
    print('most stalled instructions: stall samples, times run, instruction')
    for k in sorted(range(len(code)), key=lambda k: -code[k][2])[:25]:
        print('  %7d %10d %5d %s' % (code[k][2], code[k][1], k, code[k][3]))


if __name__ == '__main__':
    main()
