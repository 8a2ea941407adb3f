import HushRenderTool

// hush-render is thin: the renderer lives in HushRender, its command line and the plotter in HushRenderTool,
// where tests reach them.
RenderTool.main()
