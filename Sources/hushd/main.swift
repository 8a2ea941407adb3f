import HushDaemon

// hushd is thin: everything it does lives in HushDaemon, where tests can reach it.
Hushd.main()
