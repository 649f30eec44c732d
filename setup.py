"""The compiled part of lightspeed: the Kineto event scanner (``lightspeed.trace.io._kineto_scan``).

Everything else is declared in pyproject.toml. The extension is optional: where it cannot be
built (no C compiler), the install still succeeds and traces are read by the msgspec path, with
the same results and error messages (docs/trace.md).
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "lightspeed.trace.io._kineto_scan",
            sources=["src/lightspeed/trace/io/_kineto_scan.c"],
            extra_compile_args=["-std=c99", "-O2"],
            optional=True,
        )
    ]
)
