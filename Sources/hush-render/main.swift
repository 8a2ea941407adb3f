import HushRender

// hush-render is thin: the renderer lives in HushRender, where tests reach it.
RenderTool.main()
