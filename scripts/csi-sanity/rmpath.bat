@echo off
rem csi-sanity's path removal command under Wine.
"%CSIPROXYCTL%" %CSIPROXYCTL_ARGS% fs rmdir --force --yes "%~1" >NUL || exit /b 1
