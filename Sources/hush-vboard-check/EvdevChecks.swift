let evdevChecks: [Check] = []
