#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the API documentation with the toolchain's own docc, and fails on a public symbol
# without a doc comment.
#
#   scripts/docs.sh          build, check, convert: .build/docs/Keybay.doccarchive,
#                            .build/docs/KeybayPrompt.doccarchive and
#                            .build/docs/KeybayPluginKit.doccarchive
#
# 1. Symbol graphs from `swift build` (the compiler's -emit-symbol-graph, public symbols only),
#    for the three library modules, Keybay, KeybayPrompt and KeybayPluginKit. The build has its own scratch
#    directory (.build/docs-build), so the extra compiler flags never invalidate `.build/debug`.
# 2. Every public symbol declared in a Swift file of Sources/Keybay, Sources/KeybayPrompt or
#    Sources/KeybayPluginKit is
#    counted, whatever its name; one without a doc comment of its own (written above it in that
#    file) is printed as `file:line: undocumented public <kind> <name>`. Symbols the compiler
#    synthesises (Equatable's !=, an enum's init(rawValue:)) and the C declarations
#    KeybayPluginKit re-exports have no Swift source location and are not counted. A public
#    declaration the graph leaves out (@_spi; the compiler drops a type named <Module>Version...,
#    such as KeybayVersion) is found in the sources instead and needs a `///` line above it.
# 3. docc convert: Keybay with its catalog, Sources/Keybay/Keybay.docc; KeybayPrompt and
#    KeybayPluginKit from their symbol graphs alone. A docc warning (an unresolved link in a comment, say) fails the run.
#
# Exit status: 0 when every public symbol is documented and the three archives were built, 1 otherwise.
# Needs no package from outside: only swift, docc (next to swift) and python3.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

docc=$(dirname "$(readlink -f "$(command -v swift)")")/docc
[ -x "$docc" ] || docc=$(command -v docc || true)
[ -n "$docc" ] && [ -x "$docc" ] || { echo "docs: no docc next to swift or on PATH" >&2; exit 1; }

scratch=.build/docs-build
graphs=$scratch/symbol-graphs
out=.build/docs
mkdir -p "$graphs" "$out"

# The compiler writes a module's graph only when it compiles the module; an up-to-date module
# keeps the graph its last compilation wrote.
for target in Keybay KeybayPrompt KeybayPluginKit; do
  swift build --scratch-path "$scratch" --target "$target" \
    -Xswiftc -emit-symbol-graph -Xswiftc -emit-symbol-graph-dir -Xswiftc "$root/$graphs" \
    -Xswiftc -symbol-graph-minimum-access-level -Xswiftc public > "$out/build-$target.log" 2>&1 \
    || { cat "$out/build-$target.log" >&2; echo "docs: swift build --target $target failed" >&2; exit 1; }
done

status=0
python3 - "$root" "$graphs" <<'EOF' || status=1
import glob, json, os, re, sys

root, graphs = sys.argv[1], sys.argv[2]
total = undocumented = 0
per_module = {}
for module in ("Keybay", "KeybayPrompt", "KeybayPluginKit"):
    sources = "file://" + os.path.join(root, "Sources", module) + "/"
    files = sorted(glob.glob(os.path.join(graphs, module + ".symbols.json")) +
                   glob.glob(os.path.join(graphs, module + "@*.symbols.json")))
    if not files:
        print(f"docs: no symbol graph for {module} in {graphs}", file=sys.stderr)
        sys.exit(1)
    seen = set()
    found = []
    for path in files:
        for symbol in json.load(open(path))["symbols"]:
            location = symbol.get("location") or {}
            uri = location.get("uri", "")
            if not (uri.startswith(sources) and uri.endswith(".swift")):
                continue  # synthesised, or a re-exported C declaration
            usr = symbol["identifier"]["precise"]
            if usr in seen:
                continue
            seen.add(usr)
            doc = symbol.get("docComment") or {}
            own = (doc.get("uri") == uri and doc.get("module", module) == module
                   and any(line.get("text", "").strip() for line in doc.get("lines", [])))
            line = location.get("position", {}).get("line", 0) + 1
            name = ".".join(symbol["pathComponents"])
            kind = symbol["kind"]["displayName"].lower()
            if not own:
                found.append((uri[len("file://" + root) + 1:], line, kind, name))
    per_module[module] = len(seen)
    total += len(seen)
    undocumented += len(found)
    for file, line, kind, name in sorted(found):
        print(f"{file}:{line}: undocumented public {kind} {name}")

# The symbol graph leaves some public declarations out: @_spi ones, and (a quirk of the
# compiler's symbol graph) a type named <Module>Version..., KeybayVersion. A public declaration
# in the sources that is at no symbol's location is checked here instead: the line above it,
# past attributes, must be a doc comment.
located = set()
for path in glob.glob(os.path.join(graphs, "*.symbols.json")):
    for symbol in json.load(open(path))["symbols"]:
        location = symbol.get("location")
        if location and location["uri"].startswith("file://" + root + "/"):
            located.add((location["uri"][len("file://" + root) + 1:], location["position"]["line"] + 1))
declaration = re.compile(r"^\s*(?:@[\w.]+(?:\([^)]*\))?\s+)*(?:public|open)\s+(?!import\b|extension\b)")
outside = outside_undocumented = 0
for module in ("Keybay", "KeybayPrompt", "KeybayPluginKit"):
    for file in sorted(glob.glob(os.path.join("Sources", module, "**", "*.swift"), recursive=True)):
        lines = open(file).read().split("\n")
        for i, text in enumerate(lines):
            if not declaration.match(text) or (file, i + 1) in located:
                continue
            outside += 1
            j = i - 1
            while j >= 0 and re.match(r"^\s*@", lines[j]):
                j -= 1
            if not (j >= 0 and lines[j].strip().startswith("///") and lines[j].strip() != "///"):
                outside_undocumented += 1
                print(f"{file}:{i + 1}: undocumented public declaration (not in the symbol graph): {text.strip()}")

counts = ", ".join(f"{m} {n}" for m, n in per_module.items())
print(f"docs: {total} public symbols ({counts}), {undocumented} undocumented; "
      f"{outside} public declarations outside the symbol graph, {outside_undocumented} undocumented")
sys.exit(1 if undocumented or outside_undocumented else 0)
EOF

# One graph directory per archive: docc documents every module it is given.
for module in Keybay KeybayPrompt KeybayPluginKit; do
  rm -rf "$out/graphs-$module"
  mkdir -p "$out/graphs-$module"
  cp "$graphs/$module".symbols.json "$out/graphs-$module/"
  cp "$graphs/$module"@*.symbols.json "$out/graphs-$module/" 2>/dev/null || true
  catalog=()
  [ "$module" = Keybay ] && catalog=(Sources/Keybay/Keybay.docc)
  rm -rf "$out/$module.doccarchive"
  if "$docc" convert "${catalog[@]}" --additional-symbol-graph-dir "$out/graphs-$module" \
       --output-path "$out/$module.doccarchive" --fallback-display-name "$module" \
       --fallback-bundle-identifier "org.keybay.$module" --warnings-as-errors \
       > "$out/docc-$module.log" 2>&1; then
    echo "docs: $out/$module.doccarchive"
  else
    cat "$out/docc-$module.log" >&2
    echo "docs: docc convert failed for $module" >&2
    status=1
  fi
done
exit $status
