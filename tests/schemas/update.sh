#!/bin/sh
# Refreshes tests/schemas from a directory laid out like ../shared/schemas
# (README.md there): the OCSF files validate_formats.py reads for the classes
# supervise writes (copied verbatim, with LICENSE and NOTICE), and the ECS
# field extracts (extract_ecs.py). usage: tests/schemas/update.sh SCHEMAS_DIR
set -eu
src=${1:?usage: $0 SCHEMAS_DIR}
here=$(cd "$(dirname "$0")" && pwd)
py=/usr/bin/python3
classes="1001 1007 4001 6002"  # File System, Process, Network Activity, Application Lifecycle
for v in 1.1.0 1.8.0; do
  rm -rf "$here/ocsf-$v"
  for f in $("$py" "$here/../unit/audit/validate_formats.py" ocsf-files "$src/ocsf-$v" $classes) \
           LICENSE NOTICE; do
    mkdir -p "$here/ocsf-$v/$(dirname "$f")"
    cp "$src/ocsf-$v/$f" "$here/ocsf-$v/$f"
  done
done
"$py" "$here/ecs/extract_ecs.py" "$src/ecs/ecs_flat_8.11.0.yml" 8.11.0 \
  "elastic/ecs v8.11.0 generated/ecs/ecs_flat.yml" >"$here/ecs/ecs-8.11.0.json"
"$py" "$here/ecs/extract_ecs.py" "$src/ecs/ecs_flat_current.yml" 9.x-dev \
  "elastic/ecs b85f7573 (9.x development) generated/ecs/ecs_flat.yml" >"$here/ecs/ecs-current.json"
cp "$src/ecs/LICENSE.txt" "$here/ecs/LICENSE.txt"
