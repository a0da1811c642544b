// A C# server. Traps: IsError = true in this comment.
public static class Tools
{
    public static CallToolResult Fail(string message)
    {
        var doc = @"IsError = true, ""quoted""";
        return new CallToolResult { Content = [new TextContentBlock { Text = message }], IsError = true };
    }

    public static object Named() => Build(content: null, isError: true);
}
