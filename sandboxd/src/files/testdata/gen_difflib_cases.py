"""Generates difflib_cases.jsonl: expected outputs of CPython's difflib for the Rust port.

Run from this directory: python3 gen_difflib_cases.py > difflib_cases.jsonl
"""
import difflib
import json
import random


def get_diff(old, new, path):
    diff = difflib.unified_diff(old.split('\n'), new.split('\n'), fromfile=path, tofile=path, n=0)
    return '\n'.join(line.rstrip() for line in diff)


def mutate(rng, lines, vocab):
    out = list(lines)
    for _ in range(rng.randint(0, 6)):
        op = rng.choice(['ins', 'del', 'rep', 'dup'])
        pos = rng.randint(0, len(out))
        if op == 'ins':
            out[pos:pos] = [rng.choice(vocab) for _ in range(rng.randint(1, 3))]
        elif op == 'del' and out:
            del out[pos:pos + rng.randint(1, 3)]
        elif op == 'rep' and out:
            out[pos:pos + 1] = [rng.choice(vocab)]
        elif op == 'dup' and out:
            out[pos:pos] = out[max(0, pos - 2):pos]
    return out


def main():
    rng = random.Random(20240601)
    cases = []
    small_vocab = ['a', 'b', 'c', '', 'x  ', '\ty', 'line one', 'line two', ' ']
    for _ in range(330):
        vocab = small_vocab[: rng.randint(2, len(small_vocab))]
        a = [rng.choice(vocab) for _ in range(rng.randint(0, 14))]
        b = mutate(rng, a, vocab) if rng.random() < 0.8 else [rng.choice(vocab) for _ in range(rng.randint(0, 14))]
        cases.append(('\n'.join(a), '\n'.join(b), True))
    # Trailing newlines and empty texts.
    for a, b in [('', ''), ('', 'x'), ('x', ''), ('a\n', 'a'), ('a', 'a\n'), ('\n\n', '\n'), ('a\nb\n', 'a\nc\n')]:
        cases.append((a, b, True))
    # Long texts (200+ lines) with popular lines, where autojunk changes the result.
    differs = 0
    code_vocab = ['}', '', '    return x;', '{'] + [f'    call_{i}();' for i in range(60)]
    weights = [30, 30, 5, 5] + [1] * 60
    for k in range(12):
        n = rng.randint(200, 320)
        a = rng.choices(code_vocab, weights=weights, k=n)
        b = mutate(rng, a, code_vocab)
        for _ in range(rng.randint(0, 4)):
            b = mutate(rng, b, code_vocab)
        if k % 3 == 0:
            b = b[:50] + rng.choices(code_vocab, weights=weights, k=40) + b[90:]
        at, bt = '\n'.join(a), '\n'.join(b)
        junk = difflib.SequenceMatcher(None, a, b).get_opcodes()
        nojunk = difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
        differs += junk != nojunk
        cases.append((at, bt, True))
    assert differs >= 3, differs
    print(f"# autojunk changes {differs} of 12 long cases", file=__import__("sys").stderr)
    for a, b, with_ops in cases:
        case = {'a': a, 'b': b, 'diff': get_diff(a, b, 'p')}
        if with_ops:
            case['opcodes'] = [list(op) for op in difflib.SequenceMatcher(None, a.split('\n'), b.split('\n')).get_opcodes()]
        print(json.dumps(case))


main()
