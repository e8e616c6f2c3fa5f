"""What people and other programs touch: a host-side game session, the GTP engine server,
notebook play and board pictures. The command line (:mod:`othello_jax.cli`) sits on top."""
