"""Readers: each turns one profiler's files into the shared trace table.

- :mod:`~lightspeed.trace.io.formats`: which profiler wrote a file, from its first bytes;
- :mod:`~lightspeed.trace.io.source`, :mod:`~lightspeed.trace.io.kineto_stream`,
  :mod:`~lightspeed.trace.io.kineto_schema`, :mod:`~lightspeed.trace.io.kineto_table`,
  :mod:`~lightspeed.trace.io.kineto`: PyTorch profiler (Kineto) JSON, streamed and bounded;
- :mod:`~lightspeed.trace.io.nsys_sqlite`, :mod:`~lightspeed.trace.io.nsys_devices`,
  :mod:`~lightspeed.trace.io.nsys`: Nsight Systems SQLite exports (and ``.nsys-rep`` via ``nsys export``);
- :mod:`~lightspeed.trace.io.ncu`: Nsight Compute ``--csv`` output (per-kernel records, not a timeline).

The analyses (:mod:`lightspeed.trace`) read only what these produce.
"""
