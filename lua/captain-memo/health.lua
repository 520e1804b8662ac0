---:checkhealth captain-memo, under the plugin's own name: the checks of captain_memo.health.
return require("captain_memo.health")
