@echo off
rem csi-sanity's path removal command under Wine (once more if Wine's cmd
rem fails to start the program).
"%CSIPROXYCTL%" %CSIPROXYCTL_ARGS% fs rmdir --force --yes "%~1" >NUL
if not errorlevel 1 exit /b 0
"%CSIPROXYCTL%" %CSIPROXYCTL_ARGS% fs rmdir --force --yes "%~1" >NUL
if errorlevel 1 exit /b 1
