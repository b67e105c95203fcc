#!/usr/bin/env python3
"""Fails when a CBOR field name is spelled in net/ outside net/protocol/messages/.

Message bodies are types (net/protocol/messages/): each struct reads and writes its own fields,
and nothing else names one. A field name is a quoted lower-case identifier that the message
definitions use; it is flagged where it is used as a key - looked up, inserted, tested or removed
(value, insert, contains, remove, take, []) or the key of a {key, value} pair - and so is the
replies' Action::Field. (The edge lab's and the study's JSON records are read through core::Json's
find(), which is not flagged.) Usage: cborfieldnames.py <net folder>
"""
import pathlib
import re
import sys

LITERAL = r'(?:QStringLiteral|QLatin1String|QLatin1StringView|QString)\(\s*"([a-z][a-z0-9_]*)"\s*\)'
RAW = r'u?"([a-z][a-z0-9_]*)"(?:_s|_L1)?'
KEY_USE = re.compile(r'\.(?:value|insert|contains|remove|take)\(\s*(?:' + LITERAL +
                     '|' + RAW + r')\s*[,)]')
SUBSCRIPT = re.compile(r'\[\s*(?:' + LITERAL + '|' + RAW + r')\s*\]')
# A {key, value} pair whose value is not another word (a list of words is not a map).
PAIR = re.compile(r'\{\s*' + LITERAL + r'\s*,(?!\s*(?:QStringLiteral|QLatin1String|u?"))')
ACTION_FIELD = re.compile(r'\bAction::Field\b')
# Files that still spell field names, each with what is to change; an entry whose file no longer
# does fails the check too, so the list only shrinks.
PENDING = {}


def field_names(messages):
    """Every quoted lower-case identifier in the message definitions."""
    names = set()
    for path in messages.rglob('*.cpp'):
        names.update(re.findall(r'"([a-z][a-z0-9_]*)"', path.read_text(encoding='utf-8')))
    return names


def main():
    net = pathlib.Path(sys.argv[1]).resolve()
    messages = net / 'protocol' / 'messages'
    names = field_names(messages)
    found = []
    for path in sorted(net.rglob('*')):
        if path.suffix not in ('.cpp', '.h') or messages in path.parents:
            continue
        # Comments say what a message holds; only code is checked. Pairs may span lines.
        code = '\n'.join(line.split('//', 1)[0]
                         for line in path.read_text(encoding='utf-8').splitlines())
        for pattern in (KEY_USE, SUBSCRIPT, PAIR, ACTION_FIELD):
            for match in pattern.finditer(code):
                name = next((g for g in match.groups() if g), 'Action::Field')
                if name in names or name == 'Action::Field':
                    number = code.count('\n', 0, match.start()) + 1
                    found.append(f'{path.relative_to(net.parent)}:{number}: "{name}"')
    pending = {}
    for line in found:
        pending.setdefault(line.split(':', 1)[0], []).append(line)
    for path, why in PENDING.items():
        if path not in pending:
            print(f'{path} no longer spells a field name: take it off the PENDING list')
            return 1
        print(f'pending: {path} ({len(pending[path])} names): {why}')
        found = [line for line in found if not line.startswith(path + ':')]
    for line in found:
        print(line)
    if found:
        print(f'{len(found)} field name(s) spelled outside net/protocol/messages/: read and write '
              'them through the message structs there')
        return 1
    print('no CBOR field name outside net/protocol/messages/')
    return 0


if __name__ == '__main__':
    sys.exit(main())
