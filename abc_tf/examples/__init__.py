"""The contract by example, installed with the package: ``lab`` is a complete small method
(``--method=lab``) and ``squares`` a complete small data family (``--data=squares``). Each reads
top to bottom as what a package of its kind declares. A lab's own package has the same layout,
and its distribution names it under the entry point group ``abc_tf.methods`` or ``abc_tf.data``,
as this package's ``pyproject.toml`` names these two; ``abc_tf check --method=lab`` and
``abc_tf check --data=squares`` prove them.
"""
