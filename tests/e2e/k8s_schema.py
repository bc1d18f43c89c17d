"""Check Kubernetes manifests against the API schema (tests/e2e/test_deploy.sh).

    python3 tests/e2e/k8s_schema.py FILE.yaml...

The schema is the one the kubernetes Python client (Debian's
python3-kubernetes) was generated from: every object of every document is
walked with its model's field names and types, so a misspelt or misplaced
field, a number where the API wants a string (an annotation value) or the
wrong kind of value is an error, which the client's own deserializer would
pass over in silence (NEWER lists the few fields of later Kubernetes
versions that the manifests use). Required fields are then checked by
building the client's model objects. One line per document: "ok FILE
KIND/NAME", or one line per problem naming FILE, the document and the
field's path. Exit 0 when every document is valid, 1 otherwise, 2 on a
usage error.
"""
import re
import sys

import yaml
from kubernetes import client
from kubernetes.client import models

PRIMITIVES = {
    "str": (str,),
    "int": (int,),
    "float": (int, float),
    "bool": (bool,),
    "date": (str,),
    "datetime": (str,),
}


# Fields newer than the client's schema (python3-kubernetes 22: Kubernetes
# 1.22) that the manifests use, with their types.
NEWER = {
    # native sidecars: an init container that keeps running (1.28, on by
    # default from 1.29); "Always" is its one value
    "V1Container": {"restartPolicy": "str"},
}


def model_class(doc):
    """V1Pod for apiVersion v1, kind Pod; V1DaemonSet for apps/v1 ..."""
    version = str(doc.get("apiVersion", "")).split("/")[-1]
    name = version[:1].upper() + version[1:] + str(doc.get("kind", ""))
    return name if hasattr(models, name) else None


def walk(value, typ, path, errs):
    if typ == "object":  # IntOrString, RawExtension: anything goes
        return
    if typ in PRIMITIVES:
        ok = isinstance(value, PRIMITIVES[typ])
        if typ in ("int", "float") and isinstance(value, bool):
            ok = False
        if not ok:
            errs.append(f"{path}: expected {typ}, found {type(value).__name__} {value!r}")
        return
    m = re.fullmatch(r"list\[(.+)\]|dict\(str, (.+)\)", typ)
    if m:  # list[T] or dict(str, T)
        want = list if m.group(1) else dict
        if not isinstance(value, want):
            errs.append(f"{path}: expected a {want.__name__}, found {type(value).__name__}")
            return
        for k, v in enumerate(value) if want is list else value.items():
            if want is dict and not isinstance(k, str):
                errs.append(f"{path}: key {k!r} is not a string")
            walk(v, m.group(1) or m.group(2), f"{path}[{k}]" if want is list else f"{path}.{k}", errs)
        return
    cls = getattr(models, typ, None)
    if cls is None:
        errs.append(f"{path}: the schema has no type {typ}")
        return
    if not isinstance(value, dict):
        errs.append(f"{path}: expected a {typ} object, found {type(value).__name__}")
        return
    types = {json: cls.openapi_types[attr] for attr, json in cls.attribute_map.items()}
    types.update(NEWER.get(typ, {}))
    for k, v in value.items():
        if k not in types:
            errs.append(f"{path}.{k}: no such field in {typ}")
        elif v is not None:
            walk(v, types[k], f"{path}.{k}", errs)


def check(path, doc, api):
    errs = []
    if not isinstance(doc, dict):
        return [f"not a mapping: {type(doc).__name__}"], "?"
    what = f"{doc.get('kind', '?')}/{(doc.get('metadata') or {}).get('name', '?')}"
    typ = model_class(doc)
    if not typ:
        return [f"unknown apiVersion/kind {doc.get('apiVersion')!r}/{doc.get('kind')!r}"], what
    walk(doc, typ, typ, errs)
    if not (doc.get("metadata") or {}).get("name"):
        errs.append("metadata.name: missing")
    if not errs:
        try:  # the client's models refuse a missing required field
            api._ApiClient__deserialize(doc, typ)
        except (ValueError, TypeError) as e:
            errs.append(f"required field: {e}")
    return errs, what


def main(argv):
    if len(argv) < 2:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    api = client.ApiClient()
    bad = 0
    for path in argv[1:]:
        try:
            with open(path, encoding="utf-8") as f:
                docs = [d for d in yaml.safe_load_all(f) if d is not None]
        except (OSError, yaml.YAMLError) as e:
            print(f"{path}: {e}".replace("\n", " "))
            bad += 1
            continue
        if not docs:
            print(f"{path}: no document")
            bad += 1
        for i, doc in enumerate(docs):
            errs, what = check(path, doc, api)
            for e in errs:
                print(f"{path}: document {i + 1} ({what}): {e}")
            bad += bool(errs)
            if not errs:
                print(f"ok {path} {what}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
