"""What a run is told: every setting's default, the typed records resolved from them, stages, retired keys.

Plain records and ConfigDicts only: nothing here builds arrays or compiles."""
