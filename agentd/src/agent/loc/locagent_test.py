"""Plain-assert tests of locagent.py (no pytest): `python3 locagent_test.py SCRATCH_DIR`, with
the module importable as `agentd_locagent`. The fixture repository is written into the scratch
directory; every check runs in it. Prints `ok` at the end."""

import os
import sys

import agentd_locagent as loc

FIXTURE = {
    'shop/__init__.py': '',
    'shop/models.py': '''"""Orders and their lines."""


class Base:
    def save(self):
        return validate(self)


def validate(entity):
    return entity is not None


class Order(Base):
    """An order of a customer."""

    def __init__(self, customer):
        self.customer = customer
        self.lines = []

    def add_line(self, item, quantity=1):
        self.lines.append((item, quantity))
        self.save()

    def total(self):
        return sum(price_of(item) * n for item, n in self.lines)


def price_of(item):
    return PRICES.get(item, 0)


PRICES = {'apple': 3}
''',
    'shop/billing.py': '''from .models import Order, price_of
from . import models
import shop.util as util


def compute_bill(order):
    subtotal = order.total()
    return util.round_cents(subtotal * 1.2)


def make_order(customer):
    order = Order(customer)
    models.validate(order)
    return order


class Invoice(models.Base):
    def render(self):
        return super().save()
''',
    'shop/util.py': '''def round_cents(value):
    return round(value, 2)


def parseHTTPRequest(raw):
    """Turns the raw text of a request into its parts."""
    head, _, body = raw.partition('\\n\\n')
    return head, body
''',
    'scripts/run.py': '''from shop.billing import compute_bill, make_order


def main():
    order = make_order('ann')
    print(compute_bill(order))


if __name__ == '__main__':
    main()
''',
    'broken.py': 'def broken(:\n',
    '.hidden/secret.py': 'def hidden():\n    pass\n',
    'notes.txt': 'not python\n',
}


def write_fixture(root):
    for path, text in FIXTURE.items():
        full = os.path.join(root, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, 'w') as f:
            f.write(text)


def tree_state(root):
    state = {}
    for directory, _, names in os.walk(root):
        for name in names:
            full = os.path.join(directory, name)
            st = os.stat(full)
            state[full] = (st.st_size, st.st_mtime_ns)
        state[directory] = 'dir'
    return state


def check(condition, text):
    if not condition:
        raise AssertionError(text)


def contains(text, *parts):
    for part in parts:
        check(part in text, 'missing %r in:\n%s' % (part, text))


def lacks(text, *parts):
    for part in parts:
        check(part not in text, 'unexpected %r in:\n%s' % (part, text))


def test_search_by_id_name_and_keyword():
    # An entity id: the entity itself, with line numbers.
    text = loc.search_code_snippets(search_terms=['shop/util.py:round_cents'])
    contains(text, 'Entity shop/util.py:round_cents (function, lines 1-2)', '      1\tdef round_cents(value):')
    # A name: the class, whole (it is short), found among all files.
    text = loc.search_code_snippets(search_terms=['Order'])
    contains(text, "1 entity named 'Order'", 'shop/models.py:Order (class, lines 13-25)', '     13\tclass Order(Base):')
    # A qualified name, and `class ` before a name.
    contains(loc.search_code_snippets(search_terms=['Order.total']), 'shop/models.py:Order.total (function, lines 24-25)')
    contains(loc.search_code_snippets(search_terms=['class Invoice']), 'shop/billing.py:Invoice (class')
    # A keyword no entity is named: the blocks that use its words, best first.
    text = loc.search_code_snippets(search_terms=['bill'])
    contains(text, "No entity is named 'bill'", '### shop/billing.py:compute_bill (function, lines 6-8)')
    # Identifier words: camelCase and snake_case split alike.
    text = loc.search_code_snippets(search_terms=['http request'])
    contains(text, 'shop/util.py:parseHTTPRequest')
    # Nothing at all.
    contains(loc.search_code_snippets(search_terms=['zzzqqq']), "No matches for 'zzzqqq'.")
    # Several terms in one call, each with its section.
    text = loc.search_code_snippets(search_terms=['main', 'price_of'])
    contains(text, "## Search term 'main'", 'scripts/run.py:main', "## Search term 'price_of'", 'shop/models.py:price_of')
    # Hidden directories are not indexed.
    contains(loc.search_code_snippets(search_terms=['hidden']), "No matches for 'hidden'.")


def test_file_patterns():
    # A pattern narrows name matches and keyword hits to its files.
    text = loc.search_code_snippets(search_terms=['save'], file_path_or_pattern='shop/*.py')
    contains(text, 'shop/models.py:Base.save')
    text = loc.search_code_snippets(search_terms=['order'], file_path_or_pattern='scripts/**')
    contains(text, 'scripts/run.py:main')
    lacks(text, 'shop/billing.py')
    # A directory works as a pattern; a pattern matching nothing searches everything, and says so.
    contains(loc.search_code_snippets(search_terms=['order'], file_path_or_pattern='scripts'), 'scripts/run.py:main')
    text = loc.search_code_snippets(search_terms=['round_cents'], file_path_or_pattern='nothing/*.py')
    contains(text, "No files match 'nothing/*.py'; searching all files.", 'shop/util.py:round_cents')


def test_line_numbers():
    # A line inside a method: the method, the line marked.
    text = loc.search_code_snippets(line_nums=[21], file_path_or_pattern='shop/models.py')
    contains(text, '### Line 21 in shop/models.py:Order.add_line (function, lines 20-22)', '>    21\t        self.lines.append((item, quantity))')
    # A line outside any definition: the lines around it.
    text = loc.search_code_snippets(line_nums=[29], file_path_or_pattern='shop/models.py')
    contains(text, 'shop/models.py:price_of')
    text = loc.search_code_snippets(line_nums=[32], file_path_or_pattern='./shop/models.py')
    contains(text, '### Lines 22-32 of shop/models.py', ">    32\tPRICES = {'apple': 3}")
    # Absolute paths under the root are taken as relative ones.
    text = loc.search_code_snippets(line_nums=[1], file_path_or_pattern=os.path.join(os.getcwd(), 'shop/util.py'))
    contains(text, 'shop/util.py:round_cents')
    # Line numbers need one file.
    contains(loc.search_code_snippets(line_nums=[3], file_path_or_pattern='**/*.py'), 'line_nums need file_path_or_pattern to name one Python file')
    contains(loc.search_code_snippets(line_nums=[99], file_path_or_pattern='shop/util.py'), 'Line 99 is outside shop/util.py (8 lines).')
    contains(loc.search_code_snippets(), 'Give search_terms')
    contains(loc.search_code_snippets(line_nums=['x'], file_path_or_pattern='shop/util.py'), "Invalid line number 'x'")


def test_entity_contents():
    text = loc.get_entity_contents(['shop/models.py:Order.add_line', 'shop/util.py'])
    contains(
        text,
        '## shop/models.py:Order.add_line (function, lines 20-22)\n     20\t    def add_line(self, item, quantity=1):\n     21\t        self.lines.append((item, quantity))\n     22\t        self.save()',
        '## shop/util.py (file, 8 lines)\n      1\tdef round_cents(value):',
    )
    # Other spellings of an id: a leading ./, pytest's ::, a dotted module path.
    contains(loc.get_entity_contents(['./shop/models.py::Order::total']), '## shop/models.py:Order.total')
    contains(loc.get_entity_contents(['shop.models.Order.total']), '## shop/models.py:Order.total')
    # A directory: what it holds. The root: `/`.
    contains(loc.get_entity_contents(['shop/']), '## shop/ (directory)\n  shop/__init__.py\n  shop/billing.py')
    contains(loc.get_entity_contents(['/']), '  scripts/\n  shop/\n  broken.py')
    # Unknown ids are answered with the entities of that name.
    text = loc.get_entity_contents(['shop/models.py:total'])
    contains(text, 'No entity has this id', 'Entities with this name: shop/models.py:Order.total')
    # A file that does not parse is still shown.
    contains(loc.get_entity_contents(['broken.py']), '(not parsed: SyntaxError', '      1\tdef broken(:')
    contains(loc.get_entity_contents([]), 'Give entity_names')


def test_dependencies_downstream():
    text = loc.explore_tree_structure(['shop/billing.py:compute_bill'])
    contains(text, 'shop/billing.py:compute_bill (function, lines 6-8)\n└── invokes: shop/util.py:round_cents [function]')
    text = loc.explore_tree_structure(['shop/billing.py'], traversal_depth=1)
    contains(
        text,
        'contains: shop/billing.py:compute_bill [function]',
        'contains: shop/billing.py:Invoice [class]',
        'imports: shop/models.py:Order [class]',
        'imports: shop/models.py:price_of [function]',
        'imports: shop/models.py\n',
        'imports: shop/util.py',
    )
    # Calls: a class instantiated, a function through a module, a method through self (found
    # in the base class) and through super().
    contains(loc.explore_tree_structure(['shop/billing.py:make_order'], dependency_type_filter=['invokes']),
             'invokes: shop/models.py:Order [class]', 'invokes: shop/models.py:validate [function]')
    contains(loc.explore_tree_structure(['shop/models.py:Order.add_line']), 'invokes: shop/models.py:Base.save [function]')
    contains(loc.explore_tree_structure(['shop/billing.py:Invoice.render']), 'invokes: shop/models.py:Base.save [function]')
    # Inheritance, across files and through a module attribute.
    contains(loc.explore_tree_structure(['shop/billing.py:Invoice'], dependency_type_filter=['inherits']),
             'inherits: shop/models.py:Base [class]')
    contains(loc.explore_tree_structure(['shop/models.py:Order'], dependency_type_filter=['inherits']),
             'inherits: shop/models.py:Base [class]')
    # Depth 2: what the callee calls.
    text = loc.explore_tree_structure(['scripts/run.py:main'], traversal_depth=2, dependency_type_filter=['invokes'])
    contains(text, '├── invokes: shop/billing.py:compute_bill [function]\n│   └── invokes: shop/util.py:round_cents [function]')


def test_dependencies_upstream_and_structure():
    text = loc.explore_tree_structure(['shop/util.py:round_cents'], direction='upstream', traversal_depth=2,
                                      dependency_type_filter=['invokes'])
    contains(text, 'invoked by: shop/billing.py:compute_bill [function]', '    └── invoked by: scripts/run.py:main [function]')
    text = loc.explore_tree_structure(['shop/models.py:Base'], direction='upstream', dependency_type_filter=['inherits'])
    contains(text, 'inherited by: shop/models.py:Order [class]', 'inherited by: shop/billing.py:Invoice [class]')
    # The repository's structure from the root, two levels deep, directories first.
    text = loc.explore_tree_structure(['/'], traversal_depth=2, dependency_type_filter=['contains'],
                                      entity_type_filter=['directory', 'file'])
    contains(text, '/ (directory)\n├── contains: scripts/\n│   └── contains: scripts/run.py\n├── contains: shop/\n')
    lacks(text, '.hidden', 'notes.txt', '[function]')
    # Both directions.
    text = loc.explore_tree_structure(['shop/models.py:validate'], direction='both', traversal_depth=1)
    contains(text, 'contained in: shop/models.py', 'invoked by: shop/models.py:Base.save [function]',
             'invoked by: shop/billing.py:make_order [function]')
    # -1: as deep as there is.
    text = loc.explore_tree_structure(['/'], traversal_depth=-1, dependency_type_filter=['contains'])
    contains(text, '│   │   │   ├── contains: shop/models.py:Order.__init__ [function]')
    # A start given by its name alone, when only one entity has it.
    contains(loc.explore_tree_structure(['round_cents'], direction='upstream', traversal_depth=1),
             'shop/util.py:round_cents (function')
    # Mistakes are answered.
    contains(loc.explore_tree_structure(['x'], direction='sideways'), "Invalid direction 'sideways'")
    contains(loc.explore_tree_structure(['x'], entity_type_filter=['module']), "Invalid entity type 'module'")
    contains(loc.explore_tree_structure(['x'], dependency_type_filter=['calls']), "Invalid dependency type 'calls'")
    contains(loc.explore_tree_structure(['x'], traversal_depth=-2), 'Invalid traversal_depth -2')
    contains(loc.explore_tree_structure(['nowhere.py']), "No entity has the id 'nowhere.py'.")
    contains(loc.explore_tree_structure(['shop/util.py:round_cents'], traversal_depth=0), 'shop/util.py:round_cents (function')


def test_index_is_cached_and_follows_changes():
    first = loc._index()
    check(loc._index() is first, 'the index was built again for unchanged files')
    with open('shop/util.py', 'a') as f:
        f.write('\n\ndef round_up(value):\n    return round_cents(value + 0.005)\n')
    second = loc._index()
    check(second is not first, 'a changed file was not indexed again')
    check(second.files['shop/models.py'] is first.files['shop/models.py'], 'an unchanged file was parsed again')
    contains(loc.explore_tree_structure(['shop/util.py:round_up']), 'invokes: shop/util.py:round_cents [function]')
    os.remove('scripts/run.py')
    contains(loc.search_code_snippets(search_terms=['main']), "No matches for 'main'.")


def main():
    scratch = sys.argv[1]
    root = os.path.join(scratch, 'repo')
    os.makedirs(root)
    write_fixture(root)
    os.chdir(root)
    before = tree_state(root)
    tests = [
        test_search_by_id_name_and_keyword,
        test_file_patterns,
        test_line_numbers,
        test_entity_contents,
        test_dependencies_downstream,
        test_dependencies_upstream_and_structure,
    ]
    for test in tests:
        test()
    # Searching wrote nothing.
    check(tree_state(root) == before, 'the functions changed the repository')
    test_index_is_cached_and_follows_changes()
    print('ok')


if __name__ == '__main__':
    main()
