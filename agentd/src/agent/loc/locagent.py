"""LocAgent's code-localisation functions, run in the sandbox's IPython kernel.

agentd embeds this module and sends it to the kernel the first time a LocAgent needs it; each
of the agent's tool calls is then a cell `print(NAME(**ARGUMENTS))` calling one of:

* search_code_snippets(search_terms=None, line_nums=None, file_path_or_pattern='**/*.py')
* get_entity_contents(entity_names)
* explore_tree_structure(start_entities, direction='downstream', traversal_depth=2,
                         entity_type_filter=None, dependency_type_filter=None)

Each returns text for the model (problems included: a wrong argument is answered, not raised).

The repository is the kernel's working directory. Its Python files are parsed with `ast` into a
graph of entities -- directories (`src/`, the root `/`), files (`src/app.py`), classes and
functions (`src/app.py:Server.start`) -- and dependencies between them:

* contains: a directory its files and subdirectories, a file its top-level classes and
  functions, a class its methods and inner classes, a function its inner functions;
* imports: the innermost entity holding an import statement -> the class, function or file
  it imports (imports of modules outside the repository are left out);
* invokes: a function or class body -> the functions it calls and the classes it
  instantiates, and a decorated entity -> its decorators;
* inherits: a class -> its base classes.

Names are resolved statically within the repository: local definitions, the file's own
top-level names, imports (absolute, relative, `import a.b as c`, `from m import *`), `self.x`
and `cls.x` through the class and its bases, `super().x` through the bases. Calls on other
objects cannot be resolved without running the code and are left out.

Keyword search ranks blocks of code (each entity's own lines, and a file's top-level lines) with
BM25 over identifier words (`parseHTTPRequest` and `parse_http_request` both give `parse`,
`http`, `request`).

The index is built on first use and kept in memory, per working directory; on each call the
files are listed again and those whose size or modification time changed are parsed again.
Nothing is ever written. Standard library only; Python 3.8 or later.
"""

import ast
import math
import os
import re

DIRECTORY = 'directory'
FILE = 'file'
CLASS = 'class'
FUNCTION = 'function'
ENTITY_TYPES = (DIRECTORY, FILE, CLASS, FUNCTION)

CONTAINS = 'contains'
IMPORTS = 'imports'
INVOKES = 'invokes'
INHERITS = 'inherits'
DEPENDENCY_TYPES = (CONTAINS, IMPORTS, INVOKES, INHERITS)
# How an edge reads from its far end, when the tree is walked upstream.
INVERSE = {
    CONTAINS: 'contained in',
    IMPORTS: 'imported by',
    INVOKES: 'invoked by',
    INHERITS: 'inherited by',
}

ROOT = '/'
# Bounds: what one call may index and show.
MAX_FILES = 20000
MAX_FILE_BYTES = 2 * 1024 * 1024
MAX_OUTPUT_CHARS = 20000
# get_entity_contents shows at most this many lines of one entity.
MAX_ENTITY_LINES = 400
# Search results show entities up to this many lines whole, longer ones as an outline.
WHOLE_ENTITY_LINES = 60
# Name matches shown with their code; more are listed by id.
MAX_SHOWN_MATCHES = 3
MAX_LISTED_MATCHES = 20
# Keyword-search hits per term, and lines of one hit's snippet.
MAX_KEYWORD_HITS = 5
MAX_SNIPPET_LINES = 12
# Lines around a line number outside any class or function.
LINE_CONTEXT = 10
MAX_TREE_LINES = 300
# `traversal_depth=-1`: as deep as this.
UNLIMITED_DEPTH = 50

SKIPPED_DIRS = frozenset(('__pycache__', 'node_modules', 'site-packages'))

BM25_K1 = 1.2
BM25_B = 0.75


# ---------------------------------------------------------------------------------------------
# Parsing one file


class _Def:
    """A class or function definition of a file."""

    __slots__ = ('qualname', 'type', 'start', 'end', 'parent', 'body_start')

    def __init__(self, qualname, kind, start, end, parent, body_start):
        self.qualname = qualname
        self.type = kind
        self.start = start
        self.end = end
        self.parent = parent  # the enclosing definition's qualname, '' at the top level
        self.body_start = body_start  # first line of the body (the header ends before it)


class _ParsedFile:
    """What one file says: its lines, definitions, imports, calls and base classes."""

    def __init__(self, path, stamp, text):
        self.path = path
        self.stamp = stamp
        self.lines = text.splitlines()
        self.defs = []
        # (scope qualname, binding name, kind, module, level, member): kind 'module' binds the
        # module itself (`import a.b as c`: c -> a.b; `import a.b`: a -> a), 'member' a name of
        # it (`from m import x as y`: y -> m.x), 'star' all of its top-level names.
        self.imports = []
        # (scope qualname, dotted parts): `a.b.c(...)` -> ['a', 'b', 'c'].
        self.calls = []
        # (class qualname, dotted parts).
        self.bases = []
        self.error = None
        try:
            tree = ast.parse(text, filename=path)
        except (SyntaxError, ValueError) as e:
            self.error = '%s: %s' % (type(e).__name__, e)
            return
        _collect(self, tree)


def _dotted(node):
    """`a.b.c` as ['a', 'b', 'c']; `super().x` as ['super()', 'x']; else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    elif (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == 'super'
        and parts
    ):
        parts.append('super()')
    else:
        return None
    parts.reverse()
    return parts


_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _collect(parsed, tree):
    """Fills `parsed` from the syntax tree: one walk, each node with the qualified name of the
    definition whose body it is in ('' at the top level)."""
    stack = [(tree, '')]
    while stack:
        node, scope = stack.pop()
        kind = type(node)
        if kind in _DEFINITIONS:
            # Source order: the first item comes off the stack first.
            stack.extend(reversed(_define(parsed, node, scope)))
            continue
        if kind is ast.Import:
            for alias in node.names:
                if alias.asname:
                    binding, module = alias.asname, alias.name
                else:
                    binding = module = alias.name.split('.')[0]
                parsed.imports.append((scope, binding, 'module', module, 0, None))
                if not alias.asname and module != alias.name:
                    # `import a.b` binds `a` but imports `a.b` (the edge goes to a/b.py).
                    parsed.imports.append((scope, None, 'module', alias.name, 0, None))
            continue
        if kind is ast.ImportFrom:
            module = node.module or ''
            for alias in node.names:
                if alias.name == '*':
                    parsed.imports.append((scope, None, 'star', module, node.level, None))
                else:
                    binding = alias.asname or alias.name
                    parsed.imports.append((scope, binding, 'member', module, node.level, alias.name))
            continue
        if kind is ast.Call:
            parts = _dotted(node.func)
            if parts:
                parsed.calls.append((scope, parts))
        stack.extend((child, scope) for child in reversed(list(ast.iter_child_nodes(node))))


def _define(parsed, node, scope):
    """Records a class or function definition; returns what to walk: decorators, defaults
    and bases in the enclosing scope, the body in the definition's."""
    qualname = scope + '.' + node.name if scope else node.name
    start = min([d.lineno for d in node.decorator_list] + [node.lineno])
    end = getattr(node, 'end_lineno', None) or node.lineno
    body_start = node.body[0].lineno if node.body else end
    is_class = type(node) is ast.ClassDef
    parsed.defs.append(_Def(qualname, CLASS if is_class else FUNCTION, start, end, scope, body_start))
    walk = []
    # A decorator is a dependency of what it decorates.
    for decorator in node.decorator_list:
        called = decorator.func if isinstance(decorator, ast.Call) else decorator
        parts = _dotted(called)
        if parts:
            parsed.calls.append((qualname, parts))
            if isinstance(decorator, ast.Call):
                walk.extend((a, scope) for a in decorator.args)
                walk.extend((k.value, scope) for k in decorator.keywords)
        else:
            walk.append((decorator, scope))
    if is_class:
        for base in node.bases:
            parts = _dotted(base)
            if parts:
                parsed.bases.append((qualname, parts))
        walk.extend((b, scope) for b in node.bases)
        walk.extend((k.value, scope) for k in node.keywords)
    else:
        walk.extend((d, scope) for d in node.args.defaults)
        walk.extend((d, scope) for d in node.args.kw_defaults if d is not None)
    walk.extend((statement, qualname) for statement in node.body)
    return walk


# ---------------------------------------------------------------------------------------------
# The index of a repository


class Entity:
    """A directory, file, class or function."""

    __slots__ = ('id', 'type', 'file', 'qualname', 'start', 'end', 'body_start')

    def __init__(self, entity_id, kind, file=None, qualname='', start=0, end=0, body_start=0):
        self.id = entity_id
        self.type = kind
        self.file = file  # the file's path, for files, classes and functions
        self.qualname = qualname
        self.start = start
        self.end = end
        self.body_start = body_start

    @property
    def name(self):
        if self.type == DIRECTORY:
            return self.id.rstrip('/').rsplit('/', 1)[-1] or ROOT
        if self.type == FILE:
            return self.id.rsplit('/', 1)[-1]
        return self.qualname.rsplit('.', 1)[-1]

    def label(self):
        if self.type in (CLASS, FUNCTION):
            return '%s (%s, lines %d-%d)' % (self.id, self.type, self.start, self.end)
        if self.type == FILE:
            return '%s (file, %d lines)' % (self.id, self.end)
        return '%s (directory)' % self.id


_IDENTIFIER = re.compile(r'[A-Za-z_][A-Za-z0-9_]*')
_IDENTIFIER_PARTS = re.compile(r'_+|(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])')
_IDENTIFIER_WORDS = {}


def _identifier_words(identifier):
    words = _IDENTIFIER_WORDS.get(identifier)
    if words is None:
        whole = identifier.strip('_').lower()
        words = [whole] if len(whole) > 1 else []
        parts = [p for p in _IDENTIFIER_PARTS.split(identifier) if p]
        if len(parts) > 1:
            words.extend(p.lower() for p in parts if len(p) > 1)
        words = tuple(words)
        if len(_IDENTIFIER_WORDS) < 500000:
            _IDENTIFIER_WORDS[identifier] = words
    return words


def _words(text):
    """The search words of `text`: each identifier, lowercased, and its parts."""
    words = []
    for identifier in _IDENTIFIER.findall(text):
        words.extend(_identifier_words(identifier))
    return words


class _Block:
    """A block of code the keyword search ranks: an entity's own lines (without its children's)."""

    __slots__ = ('entity', 'lines', 'counts', 'length')

    def __init__(self, entity, lines, words):
        self.entity = entity
        self.lines = lines  # line numbers, from 1
        self.counts = {}
        for word in words:
            self.counts[word] = self.counts.get(word, 0) + 1
        self.length = len(words)


class Index:
    """The entities of one repository, their dependencies, and the keyword index."""

    def __init__(self, root, parsed_files, truncated):
        self.root = root
        self.files = parsed_files  # path -> _ParsedFile
        self.truncated = truncated  # files beyond MAX_FILES were left out
        self.entities = {}
        self.out = {}  # id -> [(dependency, id)]
        self.into = {}  # id -> [(dependency, id)]
        self.names = {}  # short name -> [ids]
        self.modules = {}  # dotted module name -> file path
        self._build()

    # -- building ---------------------------------------------------------------------------

    def _add(self, entity):
        self.entities[entity.id] = entity
        self.out.setdefault(entity.id, [])
        self.into.setdefault(entity.id, [])
        if entity.id != ROOT:
            self.names.setdefault(entity.name, []).append(entity.id)
            if entity.type == FILE and entity.name.endswith('.py'):
                self.names.setdefault(entity.name[:-3], []).append(entity.id)

    def _edge(self, source, dependency, target):
        if source == target or target not in self.entities or source not in self.entities:
            return
        edge = (dependency, target)
        if edge not in self.out[source]:
            self.out[source].append(edge)
            self.into[target].append((dependency, source))

    def _build(self):
        self._add(Entity(ROOT, DIRECTORY))
        for path in sorted(self.files):
            parts = path.split('/')
            parent = ROOT
            for i in range(1, len(parts)):
                directory = '/'.join(parts[:i]) + '/'
                if directory not in self.entities:
                    self._add(Entity(directory, DIRECTORY))
                    self._edge(parent, CONTAINS, directory)
                parent = directory
            parsed = self.files[path]
            self._add(Entity(path, FILE, path, '', 1, len(parsed.lines), 1))
            self._edge(parent, CONTAINS, path)
            for d in parsed.defs:
                entity_id = path + ':' + d.qualname
                self._add(Entity(entity_id, d.type, path, d.qualname, d.start, d.end, d.body_start))
                self._edge(path + ':' + d.parent if d.parent else path, CONTAINS, entity_id)
        self._index_modules()
        # Imports and base classes of every file first: calls through `self` and through
        # classes look methods up in the bases, which may be defined in any file.
        names = {}
        for path in sorted(self.files):
            parsed = self.files[path]
            names[path] = self._bindings(parsed)
            for qualname, parts in parsed.bases:
                scope = qualname.rsplit('.', 1)[0] if '.' in qualname else ''
                target = self._resolve(parsed, names[path], scope, parts)
                if target is not None and self.entities[target].type == CLASS:
                    self._edge(path + ':' + qualname, INHERITS, target)
        for path in sorted(self.files):
            parsed = self.files[path]
            for scope, parts in parsed.calls:
                target = self._resolve(parsed, names[path], scope, parts)
                if target is not None and self.entities[target].type in (CLASS, FUNCTION):
                    self._edge(path + ':' + scope if scope else path, INVOKES, target)
        self._index_blocks()

    def _index_modules(self):
        """Each file's importable names: its dotted path from the root and from each ancestor
        directory that is no package (a `src/` layout, a directory of scripts)."""
        packages = {p.rsplit('/', 1)[0] for p in self.files if p.endswith('/__init__.py')}
        for path in sorted(self.files, key=lambda p: (p.count('/'), p)):
            parts = path[:-3].split('/')
            if parts[-1] == '__init__':
                parts = parts[:-1]
            directories = path.split('/')[:-1]
            for i in range(len(directories) + 1):
                if i == 0 or '/'.join(directories[:i]) not in packages:
                    name = '.'.join(parts[i:])
                    if name:
                        self.modules.setdefault(name, path)

    def _module_file(self, path, level, module):
        """The file of module `module` imported from `path` (`level` dots before it)."""
        if not level:
            return self.modules.get(module)
        directories = path.split('/')[:-1]
        if level - 1 > len(directories):
            return None
        parts = directories[: len(directories) - (level - 1)] + (module.split('.') if module else [])
        if not parts:
            return None
        stem = '/'.join(parts)
        for candidate in (stem + '.py', stem + '/__init__.py'):
            if candidate in self.files:
                return candidate
        return None

    def _member(self, file, name):
        """What `name` of the module in `file` is: ('entity', id) of a top-level definition,
        ('module', file) of a submodule, or None."""
        entity_id = file + ':' + name
        if entity_id in self.entities:
            return ('entity', entity_id)
        if file.endswith('/__init__.py'):
            package = file[: -len('__init__.py')]
            for candidate in (package + name + '.py', package + name + '/__init__.py'):
                if candidate in self.files:
                    return ('module', candidate)
        return None

    def _bindings(self, parsed):
        """What the names a file imports stand for, per scope: ('entity', id) or
        ('module', file); and the files it star-imports, per scope. Adds the import edges."""
        bindings = {}
        stars = {}
        for scope, binding, kind, module, level, member in parsed.imports:
            source = parsed.path + ':' + scope if scope else parsed.path
            file = self._module_file(parsed.path, level, module)
            if kind == 'star':
                if file is not None:
                    stars.setdefault(scope, []).append(file)
                    self._edge(source, IMPORTS, file)
                continue
            if kind == 'module':
                target = ('module', file) if file is not None else None
            else:
                target = self._member(file, member) if file is not None else None
                if target is None:
                    submodule = self._module_file(
                        parsed.path, level, module + '.' + member if module else member
                    )
                    if submodule is not None:
                        target = ('module', submodule)
                if target is None and file is not None:
                    # A name the module makes at run time: the import is still of that file.
                    target = ('module', file)
            if target is None:
                continue
            self._edge(source, IMPORTS, target[1])
            if binding:
                bindings.setdefault(scope, {})[binding] = target
        return bindings, stars

    def _lookup(self, class_id, name, seen=None):
        """`name` looked up in a class and its bases (Python's attribute lookup, roughly)."""
        seen = seen if seen is not None else set()
        if class_id in seen:
            return None
        seen.add(class_id)
        if class_id + '.' + name in self.entities:
            return class_id + '.' + name
        for base in self._bases(class_id):
            found = self._lookup(base, name, seen)
            if found:
                return found
        return None

    def _bases(self, class_id):
        return [target for dependency, target in self.out.get(class_id, []) if dependency == INHERITS]

    def _resolve(self, parsed, names, scope, parts):
        """The class or function (or file) a dotted name used in `scope` of `parsed` stands
        for; None when it cannot be told statically."""
        bindings, stars = names
        path = parsed.path
        head, rest = parts[0], parts[1:]
        chain = []
        qualname = scope
        while qualname:
            chain.append(qualname)
            qualname = qualname.rsplit('.', 1)[0] if '.' in qualname else ''
        chain.append('')
        if head in ('self', 'cls', 'super()'):
            # The class of the method the name is used in.
            owner = next(
                (q for q in chain[1:] if q and self.entities[path + ':' + q].type == CLASS), None
            )
            if owner is None or len(rest) != 1:
                return None
            class_id = path + ':' + owner
            if head == 'super()':
                for base in self._bases(class_id):
                    found = self._lookup(base, rest[0])
                    if found:
                        return found
                return None
            return self._lookup(class_id, rest[0])
        target = None
        for qualname in chain:
            owner = self.entities[path + ':' + qualname] if qualname else None
            # What a scope defines is visible in it and, for a function or the module, in the
            # scopes it encloses; a class body does not enclose its methods' bodies.
            if owner is not None and owner.type == CLASS and qualname != scope:
                continue
            entity_id = path + ':' + (qualname + '.' + head if qualname else head)
            if entity_id in self.entities:
                target = ('entity', entity_id)
            elif head in bindings.get(qualname, {}):
                target = bindings[qualname][head]
            else:
                for file in stars.get(qualname, []):
                    target = self._member(file, head)
                    if target is not None:
                        break
            if target is not None:
                break
        if target is None:
            return None
        for part in rest:
            kind, value = target
            if kind == 'module':
                target = self._member(value, part)
            elif self.entities[value].type == CLASS:
                found = self._lookup(value, part)
                target = ('entity', found) if found else None
            else:
                target = None
            if target is None:
                return None
        return target[1]

    def _index_blocks(self):
        """The keyword index: each entity's own lines (those of no entity inside it) as a
        block, its name's words counted twice more."""
        self.blocks = []
        for path in sorted(self.files):
            parsed = self.files[path]
            count = len(parsed.lines)
            owner = [path] * (count + 1)  # line -> the innermost entity holding it
            for d in sorted(parsed.defs, key=lambda d: (d.start, -d.end)):
                last = min(d.end, count)
                if d.start <= last:
                    owner[d.start:last + 1] = [path + ':' + d.qualname] * (last + 1 - d.start)
            own = {}
            for number in range(1, count + 1):
                own.setdefault(owner[number], []).append(number)
            for entity_id, numbers in own.items():
                entity = self.entities[entity_id]
                text = '\n'.join(parsed.lines[n - 1] for n in numbers)
                words = _words(text) + _words(entity.qualname or path) * 2
                self.blocks.append(_Block(entity, numbers, words))
        self.frequency = {}
        for block in self.blocks:
            for word in block.counts:
                self.frequency[word] = self.frequency.get(word, 0) + 1
        total = sum(b.length for b in self.blocks)
        self.average_length = total / len(self.blocks) if self.blocks else 1.0

    # -- queries ----------------------------------------------------------------------------

    def lines(self, entity):
        return self.files[entity.file].lines

    def keyword_search(self, term, files):
        words = list(dict.fromkeys(_words(term)))
        if not words:
            return []
        n = len(self.blocks)
        scored = []
        for block in self.blocks:
            if files is not None and block.entity.file not in files:
                continue
            score = 0.0
            for word in words:
                tf = block.counts.get(word)
                if not tf:
                    continue
                df = self.frequency[word]
                idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
                norm = BM25_K1 * (1 - BM25_B + BM25_B * block.length / self.average_length)
                score += idf * tf * (BM25_K1 + 1) / (tf + norm)
            if score > 0:
                scored.append((-score, block.entity.id, block))
        scored.sort(key=lambda s: (s[0], s[1]))
        return [(block, words) for _, _, block in scored[:MAX_KEYWORD_HITS]]

    def innermost(self, path, line):
        best = None
        for d in self.files[path].defs:
            if d.start <= line <= d.end and (best is None or d.start >= best.start):
                best = d
        return self.entities[path + ':' + best.qualname] if best else None


_INDEXES = {}


def _stamp(full):
    st = os.stat(full)
    return (st.st_size, st.st_mtime_ns)


def _python_files(root):
    """The repository's Python files (relative paths, sorted), and whether some were left out."""
    found = []
    for directory, subdirectories, names in os.walk(root):
        subdirectories[:] = sorted(
            d
            for d in subdirectories
            if not d.startswith('.')
            and d not in SKIPPED_DIRS
            and not os.path.exists(os.path.join(directory, d, 'pyvenv.cfg'))
            and not os.path.islink(os.path.join(directory, d))
        )
        for name in sorted(names):
            if name.endswith('.py'):
                full = os.path.join(directory, name)
                found.append(os.path.relpath(full, root).replace(os.sep, '/'))
                if len(found) > MAX_FILES:
                    return found[:MAX_FILES], True
    return found, False


def _index():
    """The index of the working directory, brought up to date."""
    root = os.path.realpath(os.getcwd())
    previous = _INDEXES.get(root)
    paths, truncated = _python_files(root)
    parsed = {}
    changed = previous is None or truncated != previous.truncated or len(paths) != len(previous.files)
    for path in paths:
        full = os.path.join(root, path)
        try:
            stamp = _stamp(full)
        except OSError:
            changed = True
            continue
        old = previous.files.get(path) if previous else None
        if old is not None and old.stamp == stamp:
            parsed[path] = old
            continue
        changed = True
        if stamp[0] > MAX_FILE_BYTES:
            parsed[path] = _ParsedFile(path, stamp, '')
            parsed[path].error = 'not indexed: larger than %d bytes' % MAX_FILE_BYTES
            continue
        try:
            with open(full, 'rb') as f:
                data = f.read()
        except OSError:
            continue
        parsed[path] = _ParsedFile(path, stamp, data.decode('utf-8', errors='replace'))
    if not changed and previous is not None:
        return previous
    index = Index(root, parsed, truncated)
    _INDEXES[root] = index
    return index


# ---------------------------------------------------------------------------------------------
# Formatting


def _numbered(lines, first, last, mark=()):
    """Lines `first`..`last` as `cat -n` shows them, those in `mark` flagged with `>`."""
    out = []
    for number in range(first, last + 1):
        out.append('%s%6d\t%s' % ('>' if number in mark else ' ', number, lines[number - 1]))
    return '\n'.join(out)


def _header(index, entity):
    """An entity's header lines: the decorators and signature (and a docstring's first line)."""
    lines = index.lines(entity)
    last = max(entity.start, entity.body_start - 1)
    if entity.body_start <= entity.end:
        first_body = lines[entity.body_start - 1].strip()
        if first_body.startswith(('"', "'")):  # a docstring
            last = entity.body_start
    return _numbered(lines, entity.start, min(last, entity.end))


def _children(index, entity):
    return [
        index.entities[target]
        for dependency, target in index.out.get(entity.id, [])
        if dependency == CONTAINS
    ]


def _outline(index, entity):
    """A long class or function: its header and its members with their lines."""
    text = _header(index, entity)
    members = _children(index, entity)
    if members:
        text += '\n  members: ' + ', '.join(
            '%s (%d-%d)' % (m.qualname.rsplit('.', 1)[-1], m.start, m.end) for m in members
        )
    return text


def _whole(index, entity, limit):
    """An entity's lines, numbered, at most `limit` of them."""
    lines = index.lines(entity)
    first, last = (1, len(lines)) if entity.type == FILE else (entity.start, entity.end)
    if last - first + 1 <= limit:
        return _numbered(lines, first, last)
    return '%s\n... (%d more lines; search_code_snippets(line_nums=[...], file_path_or_pattern=%r) shows the lines around one)' % (
        _numbered(lines, first, first + limit - 1),
        last - first + 1 - limit,
        entity.file,
    )


def _preview(index, entity):
    """An entity for a search result: whole when short, else as an outline."""
    if entity.type == DIRECTORY:
        return _listing(index, entity)
    if entity.type == FILE:
        if entity.end <= WHOLE_ENTITY_LINES:
            return _whole(index, entity, WHOLE_ENTITY_LINES)
        defs = _children(index, entity)
        return 'top-level definitions (get_entity_contents shows the file): ' + (
            ', '.join('%s (%d-%d)' % (d.qualname, d.start, d.end) for d in defs) or 'none'
        )
    if entity.end - entity.start + 1 <= WHOLE_ENTITY_LINES:
        return _whole(index, entity, WHOLE_ENTITY_LINES)
    return _outline(index, entity)


def _listing(index, entity):
    children = sorted(_children(index, entity), key=lambda c: (c.type != DIRECTORY, c.id))
    return '\n'.join('  ' + c.id for c in children) or '  (no Python files)'


def _snippet(index, block, words):
    """The lines of a keyword hit that hold the words, with a line around each."""
    entity = block.entity
    lines = index.lines(entity) if entity.file else []
    if entity.type in (CLASS, FUNCTION) and entity.end - entity.start + 1 <= MAX_SNIPPET_LINES:
        return _numbered(lines, entity.start, entity.end)
    wanted = set(words)
    hits = [n for n in block.lines if wanted.intersection(_words(lines[n - 1]))]
    own = set(block.lines)
    shown = []
    if entity.type in (CLASS, FUNCTION):
        shown.append(entity.start)
    for n in hits:
        for m in (n - 1, n, n + 1):
            if m in own and m not in shown:
                shown.append(m)
    if not hits:  # the words were in its name only
        shown.extend(block.lines[:3])
    shown = sorted(set(shown))[:MAX_SNIPPET_LINES]
    out = []
    previous = None
    for n in shown:
        if previous is not None and n != previous + 1:
            out.append('   ...')
        out.append(' %6d\t%s' % (n, lines[n - 1]))
        previous = n
    return '\n'.join(out)


def _cap(text):
    if len(text) <= MAX_OUTPUT_CHARS:
        return text
    cut = text.rfind('\n', 0, MAX_OUTPUT_CHARS)
    cut = cut if cut > 0 else MAX_OUTPUT_CHARS
    return text[:cut] + '\n... (output cut at %d characters: ask for less at a time)' % MAX_OUTPUT_CHARS


# ---------------------------------------------------------------------------------------------
# Names and patterns


def _clean(name):
    return str(name).strip().strip('`"\'').strip()


def _normalize(index, name):
    """A name as the model wrote it -> the id of the entity it names, or None."""
    name = _clean(name)
    if name.endswith('()'):
        name = name[:-2]
    if name == index.root:
        return ROOT
    if name.startswith(index.root + '/'):
        name = name[len(index.root) + 1:]
    while name.startswith('./'):
        name = name[2:]
    if name in ('', '.', ROOT):
        return ROOT
    if '::' in name:  # pytest's `path::Class::test`
        file, _, rest = name.partition('::')
        name = file + ':' + rest.replace('::', '.')
    if name in index.entities:
        return name
    if name.rstrip('/') + '/' in index.entities:
        return name.rstrip('/') + '/'
    if ':' in name:
        file, _, qualname = name.partition(':')
        file = _normalize(index, file)
        if file is not None and file + ':' + qualname in index.entities:
            return file + ':' + qualname
        return None
    if '.' in name and '/' not in name and not name.endswith('.py'):
        # A dotted module path, maybe with a qualified name after it: pkg.mod.Class.method.
        parts = name.split('.')
        for i in range(len(parts), 0, -1):
            file = index.modules.get('.'.join(parts[:i]))
            if file is not None:
                rest = '.'.join(parts[i:])
                candidate = file + ':' + rest if rest else file
                if candidate in index.entities:
                    return candidate
    return None


def _glob_regex(pattern):
    out = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if pattern.startswith('**/', i):
            out.append('(?:.*/)?')
            i += 3
            continue
        if pattern.startswith('**', i):
            out.append('.*')
            i += 2
            continue
        if c == '*':
            out.append('[^/]*')
        elif c == '?':
            out.append('[^/]')
        elif c == '[':
            end = pattern.find(']', i + 1)
            if end == -1:
                out.append(re.escape(c))
            else:
                body = pattern[i + 1:end]
                if body.startswith('!'):
                    body = '^' + body[1:]
                out.append('[' + body.replace('\\', '\\\\') + ']')
                i = end
        else:
            out.append(re.escape(c))
        i += 1
    return re.compile('(?:' + ''.join(out) + r')\Z')


def _matching_files(index, pattern):
    """The indexed files `pattern` (a file, a directory or a glob) selects."""
    pattern = _clean(pattern)
    if pattern.startswith(index.root + '/'):
        pattern = pattern[len(index.root) + 1:]
    while pattern.startswith('./'):
        pattern = pattern[2:]
    pattern = pattern.lstrip('/')
    if pattern in index.files:
        return {pattern}
    directory = pattern.rstrip('/') + '/'
    if not any(ch in pattern for ch in '*?[') and directory in index.entities:
        return {p for p in index.files if p.startswith(directory)}
    regex = _glob_regex(pattern)
    return {p for p in index.files if regex.match(p)}


def _as_list(value):
    if value is None:
        return []
    if isinstance(value, (list, tuple, set)):
        return list(value)
    return [value]


# ---------------------------------------------------------------------------------------------
# The three functions


def search_code_snippets(search_terms=None, line_nums=None, file_path_or_pattern='**/*.py'):
    """Code for search terms (entity ids, names, keywords), or around line numbers of a file.

    Each term is looked up as an entity id (`src/app.py`, `src/app.py:Server.start`), then as a
    name (`Server`, `start`, `Server.start`, `app.py`), then by keywords (BM25 over code
    blocks). With `line_nums`, `file_path_or_pattern` names the file; each line is shown in the
    class or function holding it, or with the lines around it.
    """
    index = _index()
    terms = [t for t in (_clean(t) for t in _as_list(search_terms)) if t]
    numbers = []
    for n in _as_list(line_nums):
        try:
            numbers.append(int(n))
        except (TypeError, ValueError):
            return 'Invalid line number %r: give integers.' % (n,)
    if not terms and not numbers:
        return 'Give search_terms, or line_nums with file_path_or_pattern naming a file.'
    sections = []
    pattern = _clean(file_path_or_pattern) if file_path_or_pattern else ''
    files = None
    if pattern and pattern not in ('**/*.py', '**', '*'):
        files = _matching_files(index, pattern)
        if not files:
            sections.append('No files match %r; searching all files.' % pattern)
            files = None
    if index.truncated:
        sections.append('Note: only the first %d Python files are indexed.' % MAX_FILES)
    for term in terms:
        sections.append(_search_term(index, term, files))
    if numbers:
        sections.append(_search_lines(index, pattern, numbers))
    return _cap('\n\n'.join(sections))


def _search_term(index, term, files):
    out = ['## Search term %r' % term]
    entity_id = _normalize(index, term)
    if entity_id is not None:
        entity = index.entities[entity_id]
        out.append('Entity %s:' % entity.label())
        out.append(_preview(index, entity))
        return '\n'.join(out)
    matches = _name_matches(index, term, files)
    if matches:
        entities = [index.entities[m] for m in matches]
        if len(entities) <= MAX_SHOWN_MATCHES:
            out.append('%d %s named %r:' % (len(entities), 'entity' if len(entities) == 1 else 'entities', term))
            for entity in entities:
                out.append('### ' + entity.label())
                out.append(_preview(index, entity))
        else:
            out.append('%d entities named %r (get_entity_contents shows one):' % (len(entities), term))
            for entity in entities[:MAX_LISTED_MATCHES]:
                out.append('- ' + entity.label())
            if len(entities) > MAX_LISTED_MATCHES:
                out.append('- ... and %d more' % (len(entities) - MAX_LISTED_MATCHES))
        return '\n'.join(out)
    hits = index.keyword_search(term, files)
    if hits:
        out.append('No entity is named %r; the code blocks that match its words best:' % term)
        for block, words in hits:
            out.append('### ' + block.entity.label())
            out.append(_snippet(index, block, words))
        return '\n'.join(out)
    out.append('No matches for %r.' % term)
    return '\n'.join(out)


def _name_matches(index, term, files):
    """Entities whose name or qualified name is `term` (exactly, else ignoring case)."""
    for word in ('class ', 'def ', 'function ', 'method ', 'async def '):
        if term.lower().startswith(word):
            term = term[len(word):].strip()
    term = term.rstrip('()')

    def within(ids):
        return [i for i in ids if files is None or index.entities[i].file in files]

    if '.' in term and not term.endswith('.py'):
        qualified = [
            e.id for e in index.entities.values() if e.qualname == term
        ] or [
            e.id for e in index.entities.values() if e.qualname.endswith('.' + term)
        ]
        if within(qualified):
            return within(sorted(qualified))
    exact = within(sorted(set(index.names.get(term, ()))))
    if exact:
        return exact
    lower = term.lower()
    return within(sorted({i for name, ids in index.names.items() if name.lower() == lower for i in ids}))


def _search_lines(index, pattern, numbers):
    out = ['## Lines %s of %s' % (', '.join(str(n) for n in numbers), pattern or '(no file)')]
    path = _normalize(index, pattern) if pattern else None
    if path is None or index.entities[path].type != FILE:
        out.append('line_nums need file_path_or_pattern to name one Python file of the repository (e.g. %r).' % (
            sorted(index.files)[0] if index.files else 'src/app.py'))
        return '\n'.join(out)
    lines = index.files[path].lines
    shown = set()
    windows = []
    for number in numbers:
        if not 1 <= number <= len(lines):
            out.append('Line %d is outside %s (%d lines).' % (number, path, len(lines)))
            continue
        entity = index.innermost(path, number)
        if entity is None:
            windows.append([max(1, number - LINE_CONTEXT), min(len(lines), number + LINE_CONTEXT)])
            continue
        if entity.id in shown:
            continue
        shown.add(entity.id)
        marks = {n for n in numbers if entity.start <= n <= entity.end}
        out.append('### Line %s in %s' % (', '.join(str(n) for n in sorted(marks)), entity.label()))
        if entity.end - entity.start + 1 <= WHOLE_ENTITY_LINES:
            out.append(_numbered(lines, entity.start, entity.end, marks))
        else:
            first = max(entity.start, min(marks) - LINE_CONTEXT)
            last = min(entity.end, max(marks) + LINE_CONTEXT)
            out.append(_header(index, entity) if first > entity.start else '')
            out.append(_numbered(lines, first, last, marks))
    windows.sort()
    merged = []
    for window in windows:
        if merged and window[0] <= merged[-1][1] + 1:
            merged[-1][1] = max(merged[-1][1], window[1])
        else:
            merged.append(window)
    for first, last in merged:
        marks = {n for n in numbers if first <= n <= last}
        out.append('### Lines %d-%d of %s' % (first, last, path))
        out.append(_numbered(lines, first, last, marks))
    return '\n'.join(part for part in out if part)


def get_entity_contents(entity_names):
    """The code of each entity, with line numbers: a file, class or function by id
    (`src/app.py`, `src/app.py:Server.start`), or what a directory holds."""
    index = _index()
    names = [n for n in (_clean(n) for n in _as_list(entity_names)) if n]
    if not names:
        return 'Give entity_names: ids like "src/app.py" or "src/app.py:Server.start".'
    out = []
    for name in names:
        entity_id = _normalize(index, name)
        if entity_id is None:
            text = '## %s\nNo entity has this id. Ids look like "src/app.py" (a file) or "src/app.py:Server.start" (a class or function).' % name
            similar = _name_matches(index, name.rsplit(':', 1)[-1].rsplit('/', 1)[-1], None)
            if similar:
                text += ' Entities with this name: ' + ', '.join(similar[:MAX_LISTED_MATCHES])
            out.append(text)
            continue
        entity = index.entities[entity_id]
        if entity.type == DIRECTORY:
            out.append('## %s\n%s' % (entity.label(), _listing(index, entity)))
            continue
        text = '## ' + entity.label()
        parsed = index.files[entity.file]
        if entity.type == FILE and parsed.error:
            text += '\n(not parsed: %s)' % parsed.error
        out.append(text + '\n' + _whole(index, entity, MAX_ENTITY_LINES))
    return _cap('\n\n'.join(out))


def explore_tree_structure(
    start_entities,
    direction='downstream',
    traversal_depth=2,
    entity_type_filter=None,
    dependency_type_filter=None,
):
    """The dependencies around entities, as trees. `downstream` follows each entity's own
    edges (what it contains, imports, invokes, inherits from), `upstream` the edges into it
    (what contains, imports, invokes or inherits from it), `both` both. `traversal_depth` -1
    goes as deep as there is. The filters keep only the entities and dependencies of the
    given types."""
    index = _index()
    if direction not in ('upstream', 'downstream', 'both'):
        return "Invalid direction %r: use 'upstream', 'downstream' or 'both'." % (direction,)
    try:
        depth = int(traversal_depth)
    except (TypeError, ValueError):
        return 'Invalid traversal_depth %r: give -1 or a number from 0.' % (traversal_depth,)
    if depth < -1:
        return 'Invalid traversal_depth %d: give -1 or a number from 0.' % depth
    if depth == -1:
        depth = UNLIMITED_DEPTH
    entity_types = _as_list(entity_type_filter) or list(ENTITY_TYPES)
    dependency_types = _as_list(dependency_type_filter) or list(DEPENDENCY_TYPES)
    for value, valid, what in (
        (entity_types, ENTITY_TYPES, 'entity type'),
        (dependency_types, DEPENDENCY_TYPES, 'dependency type'),
    ):
        wrong = [v for v in value if v not in valid]
        if wrong:
            return 'Invalid %s %r: the %ss are %s.' % (what, wrong[0], what, ', '.join(valid))
    starts = [s for s in (_clean(s) for s in _as_list(start_entities)) if s] or [ROOT]
    trees = []
    for start in starts:
        entity_id = _normalize(index, start)
        if entity_id is None:
            matches = _name_matches(index, start, None)
            if len(matches) == 1:
                entity_id = matches[0]
            else:
                text = 'No entity has the id %r.' % start
                if matches:
                    text += ' Entities with this name: ' + ', '.join(matches[:MAX_LISTED_MATCHES])
                trees.append(text)
                continue
        trees.append(_tree(index, entity_id, direction, depth, set(entity_types), set(dependency_types)))
    return _cap('\n\n'.join(trees))


def _neighbours(index, entity_id, direction, entity_types, dependency_types):
    """The edges to follow from an entity: (label, far end), in a stable order."""
    found = []
    if direction in ('downstream', 'both'):
        found += [(d, target, d) for d, target in index.out.get(entity_id, [])]
    if direction in ('upstream', 'both'):
        found += [(INVERSE[d], source, d) for d, source in index.into.get(entity_id, [])]
    order = {d: i for i, d in enumerate(DEPENDENCY_TYPES)}

    def position(edge):
        label, far, dependency = edge
        entity = index.entities[far]
        upstream = label != dependency
        return (upstream, order[dependency], entity.type != DIRECTORY, entity.file or '', entity.start, far)

    return [
        (label, far)
        for label, far, dependency in sorted(found, key=position)
        if dependency in dependency_types and index.entities[far].type in entity_types
    ]


def _tree(index, start, direction, depth, entity_types, dependency_types):
    """The tree of `start`'s dependencies, `depth` edges deep. An entity already expanded is
    shown again but not expanded twice; the edge back to where the walk came from is left out."""
    lines = [index.entities[start].label()]
    expanded = {start}
    budget = [MAX_TREE_LINES]
    omitted = [0]

    def neighbours(entity_id):
        return _neighbours(index, entity_id, direction, entity_types, dependency_types)

    def walk(entity_id, came_from, prefix, level):
        edges = [e for e in neighbours(entity_id) if e[1] != came_from]
        for i, (label, target) in enumerate(edges):
            if budget[0] <= 0:
                omitted[0] += len(edges) - i
                return
            budget[0] -= 1
            last = i == len(edges) - 1
            entity = index.entities[target]
            deeper = level + 1 < depth
            seen = target in expanded
            kind = ' [%s]' % entity.type if entity.type in (CLASS, FUNCTION) else ''
            note = ' (expanded above)' if deeper and seen and neighbours(target) else ''
            lines.append('%s%s %s: %s%s%s' % (prefix, '└──' if last else '├──', label, target, kind, note))
            if deeper and not seen:
                expanded.add(target)
                walk(target, entity_id, prefix + ('    ' if last else '│   '), level + 1)

    if depth > 0:
        walk(start, None, '', 0)
    if omitted[0]:
        lines.append('... (%d more edges not shown: lower traversal_depth or add filters)' % omitted[0])
    if len(lines) == 1 and depth > 0:
        filtered = entity_types != set(ENTITY_TYPES) or dependency_types != set(DEPENDENCY_TYPES)
        lines.append('(no %s dependencies%s)' % (
            'upstream or downstream' if direction == 'both' else direction,
            ' of the chosen types' if filtered else '',
        ))
    return '\n'.join(lines)
