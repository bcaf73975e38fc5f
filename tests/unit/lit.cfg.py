# -*- Python -*-
# The GoogleTest suite: every binary named *Tests under tests/unit in the build tree.

import os

import lit.formats

config.name = "mhac-unit"
config.test_format = lit.formats.GoogleTest(".", "Tests")
config.test_source_root = os.path.join(config.mhac_obj_root, "tests", "unit")
config.test_exec_root = config.test_source_root
