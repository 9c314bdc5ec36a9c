"""The optional compiled part: libyaml's events read in C for the YAML parser
(``treeagent.formats._yaml_libyaml``). Without Cython, a C compiler or libyaml's headers
the package installs without it and parses YAML through PyYAML, to the same trees."""

from setuptools import Extension, setup

try:
    from Cython.Build import cythonize
except ImportError:
    ext_modules = []
else:
    ext_modules = cythonize(
        [Extension("treeagent.formats._yaml_libyaml",
                   ["src/treeagent/formats/_yaml_libyaml.pyx"],
                   libraries=["yaml"], optional=True)],
        quiet=True,
    )

setup(ext_modules=ext_modules)
