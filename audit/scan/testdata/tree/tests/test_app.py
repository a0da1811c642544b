from server.app import Server


def test_unknown():
    assert Server().call_tool("x", {}) == {"content": [], "isError": True}
