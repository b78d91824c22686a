//! An agent's address in a fleet: `NAME@NODE` (a member by name or id), or a
//! bare `NAME` (this node's agent, else the fleet's only agent of that name).

/// `NAME@NODE` -> (`NAME`, `Some(NODE)`); a bare name has no node.
pub fn split_address(address: &str) -> (&str, Option<&str>) {
    match address.rsplit_once('@') {
        Some((name, node)) => (name, Some(node)),
        None => (address, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_split_at_the_last_at() {
        assert_eq!(split_address("coder@n3"), ("coder", Some("n3")));
        assert_eq!(split_address("coder"), ("coder", None));
        assert_eq!(split_address("coder@"), ("coder", Some("")));
        assert_eq!(split_address("a@b@n-1"), ("a@b", Some("n-1")));
    }
}
