# SPDX-License-Identifier: Apache-2.0
"""decoders_check.c: the strict JSON reader and writer and the record encoding of
integrations/common on their own, built here with cc (-Werror) and run."""
import subprocess

from conftest import REPOSITORY, STRICT_CFLAGS


def test_decoders_check(tmp_path):
    common = REPOSITORY / "integrations" / "common"
    program = tmp_path / "decoders_check"
    built = subprocess.run(["cc", *STRICT_CFLAGS.split(), "-I", str(common), str(REPOSITORY / "integrations" / "tests" / "decoders_check.c"),
                            str(common / "strict_json.c"), str(common / "integration_record.c"), "-lsodium", "-o", str(program)],
                           capture_output=True, text=True, timeout=120)
    assert built.returncode == 0, built.stderr
    result = subprocess.run([str(program)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout
    assert result.stdout.strip().endswith(" checks, 0 failures"), result.stdout
