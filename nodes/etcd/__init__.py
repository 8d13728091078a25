"""etcd (3.4, Debian's etcd-server) as a system under test."""
