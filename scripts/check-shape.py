#!/usr/bin/env python3
"""The shape the code keeps (docs/development.md): no source file under app/, deploy/, net/, vision/
or ui/ over 700 lines, and no function outside tests over 150 lines. Functions are found as clang-format
writes them: a signature, then `{` alone on a line, closed by `}` at the same indentation."""
import re
import subprocess
import sys
from pathlib import Path

MAX_FILE_LINES = 700
MAX_FUNCTION_LINES = 150
root = Path(__file__).resolve().parent.parent
files = subprocess.run(['git', 'ls-files', '--cached', '--others', '--exclude-standard',
                        'app', 'core', 'deploy', 'net', 'vision', 'ui'], cwd=root, check=True,
                       capture_output=True, text=True).stdout.split()
not_function = re.compile(r'^\s*(namespace|class|struct|union|enum)\b|=\s*$|\[[^\]]*\]\s*(\(.*\))?\s*(mutable)?\s*$')
problems = []
for name in files:
    path = root / name
    if path.suffix not in ('.cpp', '.h') or not path.exists():
        continue
    lines = path.read_text(encoding='utf-8').split('\n')
    if name.split('/')[0] != 'core' and len(lines) - 1 > MAX_FILE_LINES:
        problems.append(f'{name}: {len(lines) - 1} lines (at most {MAX_FILE_LINES})')
    for i, line in enumerate(lines):
        m = re.fullmatch(r'(\s*)\{', line)
        if not m or i == 0:
            continue
        # The signature: the lines above back to one that ends a statement or a block.
        j = i - 1
        while j > 0 and not re.search(
                r'[;{}]\s*$|\*/\s*$|^\s*(public|private|protected):|^\s*$|^\s*(//|/\*|\*)|^#',
                lines[j - 1]):
            j -= 1
        signature = ' '.join(lines[j:i])
        if '(' not in signature or not_function.search(signature):
            continue
        end = next((k for k in range(i + 1, len(lines))
                    if re.fullmatch(re.escape(m.group(1)) + r'\}.*', lines[k])), None)
        if end is None:
            continue
        length = end - j + 1
        if length > MAX_FUNCTION_LINES:
            problems.append(f'{name}:{j + 1}: a function of {length} lines (at most '
                            f'{MAX_FUNCTION_LINES}): {lines[j].strip()[:70]}')
for p in problems:
    print(p)
print(f'shape: {len(files)} files, {len(problems)} over the limits')
sys.exit(1 if problems else 0)
