#!/usr/bin/env python3
"""icount.py - instructions per interaction in a kernel's inner loop, from objdump -d output.

usage: objdump -d --no-show-raw-insn obj.o | icount.py LABEL FUNCTION MARKER [LABEL FUNCTION MARKER ...]

For each FUNCTION (a symbol name; a suffix such as .isra.0 or ._omp_fn.0 is allowed with
FUNCTION*) it finds the innermost loops (a backward branch and the instructions from its target
to it, with no other backward branch inside) and counts, in each, the instructions and the
interactions one pass computes: the lanes of the MARKER instructions (one per pair vector:
frsqrte for an estimate kernel, fsqrt for one that takes 1 / sqrt; v1.4s = 4 lanes, v1.2d = 2,
a scalar register = 1). The loop with the most interactions per pass is the kernel's steady
loop (MARKER:scalar: the one with the fewest, a scalar loop beside a vector one); it prints,
after LABEL, its instructions, interactions and their ratio."""
import re
import sys

BRANCH = re.compile(r'^(b|b\.\w+|cbz|cbnz|tbz|tbnz|br_if|br)$')


def functions(text):
    funcs, name = {}, None
    for line in text.splitlines():
        m = re.match(r'^[0-9a-f]+ <(.+)>:$', line)
        if m:
            name = m.group(1)
            funcs[name] = []
            continue
        m = re.match(r'^\s+([0-9a-f]+):\s+(\S+)\s*(.*)$', line)
        if m and name:
            funcs[name].append((int(m.group(1), 16), m.group(2), m.group(3)))
    return funcs


def lanes(ops):
    m = re.search(r'\.(\d+)([sd])\b', ops)
    return int(m.group(1)) if m else 1


def loops(insns):
    addr = [a for a, _, _ in insns]
    found = []
    for k, (a, op, ops) in enumerate(insns):
        if not BRANCH.match(op):
            continue
        m = re.search(r'\b([0-9a-f]+) <', ops)
        if not m:
            continue
        t = int(m.group(1), 16)
        if t <= a and t in addr:
            found.append((addr.index(t), k))
    inner = [(s, e) for s, e in found if not any((s2, e2) != (s, e) and s <= s2 and e2 <= e for s2, e2 in found)]
    return inner


def main():
    text = sys.stdin.read()
    funcs = functions(text)
    args = sys.argv[1:]
    for label, name, marker in zip(args[0::3], args[1::3], args[2::3]):
        fewest = marker.endswith(':scalar')
        marker = marker.split(':')[0]
        names = [n for n in funcs if n == name or (name.endswith('*') and n.startswith(name[:-1]))]
        best = None
        for n in names:
            for s, e in loops(funcs[n]):
                body = funcs[n][s:e + 1]
                inter = sum(lanes(ops) for _, op, ops in body if op == marker)
                better = best is None or (inter < best[1] if fewest else inter > best[1]) or (inter == best[1] and len(body) < best[0])
                if inter and better:
                    best = (len(body), inter, n)
        if best is None:
            print('%-34s no loop with %s found in %s' % (label, marker, name))
        else:
            print('%-34s %4d instructions, %2d interactions per pass: %5.2f per interaction' %
                  (label, best[0], best[1], best[0] / best[1]))


if __name__ == '__main__':
    main()
