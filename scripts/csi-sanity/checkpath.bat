@echo off
rem csi-sanity's path check command under Wine: directory, not_found or other
rem (once more if Wine's cmd fails to start the program).
"%CSIPROXYCTL%" %CSIPROXYCTL_ARGS% fs kind "%~1"
if not errorlevel 1 exit /b 0
"%CSIPROXYCTL%" %CSIPROXYCTL_ARGS% fs kind "%~1"
if errorlevel 1 exit /b 1
