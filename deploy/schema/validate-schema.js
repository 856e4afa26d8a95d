#!/usr/bin/env node
// Schema checks of rendered Kubernetes objects, offline.
//
//   node validate-schema.js MODULES_DIR CASES.json
//
// MODULES_DIR holds node_modules installed from deploy/schema/package-lock.json
// (deploy/validate.sh runs `npm ci` there). CASES.json is
// {"case name": [object, ...], ...}; the answer on stdout is
// {"case name": ["Kind/name: path: problem", ...], ...}.
//
// Two checks per object:
//  1. the kubernetes-models class of its apiVersion/kind (CRDs of the
//     Prometheus Operator from @kubernetes-models/prometheus-operator) and
//     its .validate(): types, enums, required fields;
//  2. unknown fields, which .validate() lets through (the generated schemas
//     allow additional properties): every key of the object is looked up in
//     the TypeScript interface of the same package (the .d.ts files), walked
//     with the TypeScript type checker. The API server's strict field
//     validation (kubectl apply --validate=strict) rejects the same keys.
"use strict";

const fs = require("fs");
const path = require("path");

const modulesDir = path.resolve(process.argv[2] || ".");
const cases = JSON.parse(fs.readFileSync(process.argv[3], "utf8"));
const requireHere = require("module").createRequire(
  path.join(modulesDir, "package.json"));
const ts = requireHere("typescript");

// apiVersion -> module directory holding one file per kind.
function moduleOf(apiVersion, kind) {
  if (apiVersion === "monitoring.coreos.com/v1") {
    return "@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/" +
      kind;
  }
  if (!/^[a-z0-9.]+\/v[0-9a-z]+$|^v1$/.test(apiVersion || "")) return null;
  return "kubernetes-models/" + apiVersion + "/" + kind;
}

function label(obj) {
  const md = obj && obj.metadata ? obj.metadata : {};
  return (obj && obj.kind ? obj.kind : "?") + "/" + (md.name || "?");
}

// ---- 1. kubernetes-models .validate()
function modelErrors(obj) {
  const mod = moduleOf(obj.apiVersion, obj.kind);
  let cls;
  try {
    cls = mod && requireHere(mod)[obj.kind];
  } catch (e) {
    cls = null;
  }
  if (!cls) {
    return [label(obj) + ": apiVersion " + obj.apiVersion + " kind " +
      obj.kind + " has no schema in kubernetes-models"];
  }
  try {
    new cls(obj).validate();
    return [];
  } catch (e) {
    const errs = e.errors || [{ instancePath: "", message: e.message }];
    return errs.map((x) => {
      const where = (x.instancePath || "").replace(/\/(\d+)(?=\/|$)/g, "[$1]").
        replace(/^\//, "").replace(/\//g, ".") || "(object)";
      const extra = x.params && x.params.allowedValues ?
        " " + JSON.stringify(x.params.allowedValues) : "";
      return label(obj) + ": " + where + ": " + x.message + extra;
    });
  }
}

// ---- 2. unknown fields through the TypeScript interfaces
const kinds = new Map(); // "apiVersion kind" -> interface alias in the root
function rootSource(objects) {
  const lines = [];
  for (const obj of objects) {
    const key = obj.apiVersion + " " + obj.kind;
    const mod = moduleOf(obj.apiVersion, obj.kind);
    if (kinds.has(key) || !mod) continue;
    const alias = "T" + kinds.size;
    kinds.set(key, alias);
    lines.push("import { I" + obj.kind + " as " + alias + " } from " +
      JSON.stringify(mod) + ";");
    lines.push("export type X" + alias + " = " + alias + ";");
  }
  return lines.join("\n") + "\n";
}

const all = [].concat(...Object.values(cases));
const rootFile = path.join(modulesDir, "__bertology_kinds__.ts");
const source = rootSource(all);
const options = {
  strict: true, noEmit: true, skipLibCheck: true,
  module: ts.ModuleKind.CommonJS, moduleResolution: ts.ModuleResolutionKind.Node10,
  target: ts.ScriptTarget.ES2020, types: [],
};
const host = ts.createCompilerHost(options);
const readFile = host.readFile.bind(host);
const fileExists = host.fileExists.bind(host);
host.readFile = (f) => (path.resolve(f) === rootFile ? source : readFile(f));
host.fileExists = (f) => path.resolve(f) === rootFile || fileExists(f);
host.getSourceFile = ((orig) => (f, lang, onErr, create) =>
  path.resolve(f) === rootFile ?
    ts.createSourceFile(f, source, lang, true) : orig(f, lang, onErr, create))(
  host.getSourceFile.bind(host));
const program = ts.createProgram([rootFile], options, host);
const checker = program.getTypeChecker();
const rootSf = program.getSourceFile(rootFile);

const aliasTypes = new Map();
for (const st of rootSf.statements) {
  if (ts.isTypeAliasDeclaration(st)) {
    aliasTypes.set(st.name.text.slice(1),
      checker.getTypeAtLocation(st.name));
  }
}

function nonNullable(t) {
  return checker.getNonNullableType(t);
}

function objectMembers(t) {
  // The object-like members of a (union) type.
  const parts = t.isUnion() ? t.types : [t];
  return parts.filter((p) => (p.flags & ts.TypeFlags.Object) ||
    p.isIntersection());
}

function walk(value, type, where, out, obj) {
  if (value === null || typeof value !== "object") return;
  type = nonNullable(type);
  if (type.flags & (ts.TypeFlags.Any | ts.TypeFlags.Unknown)) return;
  if (Array.isArray(value)) {
    const arr = objectMembers(type).find((p) => checker.isArrayType(p) ||
      checker.isTupleType(p));
    if (!arr) return; // a type mismatch; .validate() reports it
    const elem = checker.getTypeArguments(arr)[0];
    value.forEach((v, i) => walk(v, elem, where + "[" + i + "]", out, obj));
    return;
  }
  const members = objectMembers(type).filter((p) => !checker.isArrayType(p));
  if (members.length === 0) return;
  const t = members[0];
  const index = checker.getIndexInfoOfType(t, ts.IndexKind.String);
  for (const key of Object.keys(value)) {
    const here = where ? where + "." + key : key;
    const prop = checker.getPropertyOfType(t, key);
    if (prop) {
      const decl = prop.valueDeclaration || (prop.declarations || [])[0];
      const pt = decl ? checker.getTypeOfSymbolAtLocation(prop, decl) :
        checker.getTypeOfSymbol(prop);
      walk(value[key], pt, here, out, obj);
    } else if (index) {
      walk(value[key], index.type, here, out, obj);
    } else {
      const name = checker.typeToString(t);
      out.push(label(obj) + ": " + here + ": unknown field \"" + key +
        "\"" + (name.length < 60 ? " (not in " + name + ")" : ""));
    }
  }
}

function unknownFields(obj) {
  const alias = kinds.get(obj.apiVersion + " " + obj.kind);
  const type = alias && aliasTypes.get(alias);
  if (!moduleOf(obj.apiVersion, obj.kind)) return []; // named by modelErrors
  if (!type || (type.flags & (ts.TypeFlags.Any | ts.TypeFlags.Unknown))) {
    // Never let a missing interface turn the check off silently.
    return [label(obj) + ": no TypeScript interface I" + obj.kind +
      " for the unknown-field check"];
  }
  const out = [];
  walk(obj, type, "", out, obj);
  return out;
}

const answer = {};
for (const [name, objects] of Object.entries(cases)) {
  const errs = [];
  for (const obj of objects) {
    if (!obj || typeof obj !== "object") continue;
    errs.push(...modelErrors(obj), ...unknownFields(obj));
  }
  answer[name] = errs;
}
process.stdout.write(JSON.stringify(answer, null, 1) + "\n");
