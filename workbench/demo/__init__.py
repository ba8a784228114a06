"""The offline demo: the bundled public sets, and the whole loop run over them."""
