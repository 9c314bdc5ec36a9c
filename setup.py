"""The optional compiled parts: libyaml's events read in C for the YAML parser
(``treeagent.formats._yaml_libyaml``), and the loop that cuts a text into line pieces
and deduplicates them for token offsets (``treeagent.tokenizers._line_pieces``). Without
Cython or a C compiler the package installs without them (without libyaml's headers,
without the first): YAML is parsed through PyYAML and the pieces are cut in Python, to
the same trees and the same offsets."""

from setuptools import Extension, setup

try:
    from Cython.Build import cythonize
except ImportError:
    ext_modules = []
else:
    ext_modules = cythonize(
        [Extension("treeagent.formats._yaml_libyaml",
                   ["src/treeagent/formats/_yaml_libyaml.pyx"],
                   libraries=["yaml"], optional=True),
         Extension("treeagent.tokenizers._line_pieces",
                   ["src/treeagent/tokenizers/_line_pieces.pyx"], optional=True)],
        quiet=True,
    )

setup(ext_modules=ext_modules)
