"""Checks what agentd asked of a (fake) Kubernetes API against the API's own documents.

Reads one JSON object on stdin:
  {"version": "1.33",
   "objects": [object, ...],            # validated against the version's schemas, strict
   "manifests": ["file.yaml", ...],     # every document in them, the same way
   "requests": [{"method", "path", "query": [name, ...], "content_type"}, ...]}
and prints {"problems": [text, ...]}: each object that is not valid (strict: no unknown
field), each request whose path, method, query parameter or patch type the API does not
document. The documented parameters come from the official Python client of that version:
its API modules are generated from the API's OpenAPI document, one function per path and
method, which names the path, the method, every query parameter and the content types.
"""

import ast
import json
import pathlib
import re
import sys

import kubernetes_validate
import yaml


def documented(api_dir):
    """(method, path template) -> {"query": set, "content_types": set}."""
    operations = {}
    for module in ("core_v1_api.py", "networking_v1_api.py"):
        tree = ast.parse((api_dir / module).read_text())
        for function in ast.walk(tree):
            if not (isinstance(function, ast.FunctionDef) and function.name.endswith("_with_http_info")):
                continue
            path = method = None
            query, content_types = set(), set()
            for node in ast.walk(function):
                if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
                    continue
                name = node.func.attr
                if name == "call_api":
                    path, method = node.args[0].value, node.args[1].value
                elif name == "append" and getattr(node.func.value, "id", "") == "query_params":
                    query.add(node.args[0].elts[0].value)
                elif name == "select_header_content_type":
                    content_types.update(e.value for e in node.args[0].elts)
            if path:
                operations[(method, path)] = {"query": query, "content_types": content_types}
    return operations


def template_regex(template):
    return re.compile("^" + re.sub(r"\\{[^}]+\\}", "[^/]+", re.escape(template)) + "$")


def main():
    request = json.load(sys.stdin)
    version = request["version"]
    problems = []

    def validate(obj, where):
        try:
            kubernetes_validate.validate(obj, version, strict=True)
        except kubernetes_validate.ValidationError as e:
            path = "/".join(str(p) for p in e.absolute_path)
            problems.append(f"{where}: {e.message} (at {path or 'the top'})")
        except Exception as e:  # unknown kinds, unreadable objects
            problems.append(f"{where}: {type(e).__name__}: {getattr(e, 'message', e)}")

    for obj in request.get("objects", []):
        validate(obj, f"{obj.get('kind')} {obj.get('metadata', {}).get('name')}")
    for manifest in request.get("manifests", []):
        for i, document in enumerate(yaml.safe_load_all(pathlib.Path(manifest).read_text())):
            if document is not None:
                validate(document, f"{manifest} document {i} ({document.get('kind')})")

    api_dir = pathlib.Path(kubernetes_validate.__file__).parent.parent / "kubernetes" / "client" / "api"
    operations = documented(api_dir)
    templates = [(template_regex(p), m, p) for (m, p) in operations]
    for r in request.get("requests", []):
        matches = [p for (regex, m, p) in templates if m == r["method"] and regex.match(r["path"])]
        if not matches:
            problems.append(f"{r['method']} {r['path']}: no such operation in the API")
            continue
        # The most specific template (fewest placeholders) names the operation.
        template = min(matches, key=lambda p: p.count("{"))
        operation = operations[(r["method"], template)]
        for name in r["query"]:
            if name not in operation["query"]:
                problems.append(
                    f"{r['method']} {template}: query parameter {name!r} is not one the API documents "
                    f"({', '.join(sorted(operation['query']))})")
        content_type = (r.get("content_type") or "").split(";")[0].strip()
        if r["method"] == "PATCH" and content_type not in operation["content_types"]:
            problems.append(f"PATCH {template}: content type {content_type!r} is not one the API takes")
    json.dump({"problems": problems, "operations": len(operations)}, sys.stdout)


main()
