/// hush-render scenarios that tests in more than one target render: in process (HushRenderTests) and through the
/// built hush-render (HushIntegrationTests), which must agree.
public enum TestScenarios {
    /// Music (440 Hz) and an ambient effect (1000 Hz) on headphones; silence from 1 s to 2 s; unplugged at 3 s.
    public static let silenceThenUnplug = """
        0 plug
        0 activate 1 music playback tone=440 loop
        0 activate 2 effect ambient tone=1000 loop
        0.1 play 1
        0.1 play 2
        1 silence on        # R1
        2 silence off
        3 unplug            # R5
        4 end
        """
}
