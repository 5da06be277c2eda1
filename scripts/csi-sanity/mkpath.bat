@echo off
rem csi-sanity's path creation command under Wine: makes the folder on the
rem host the plugin talks to, through csiproxyctl, and prints it. Wine's
rem cmd now and then fails to start a program: once more, then.
"%CSIPROXYCTL%" %CSIPROXYCTL_ARGS% fs mkdir --yes "%~1" >NUL
if not errorlevel 1 goto made
"%CSIPROXYCTL%" %CSIPROXYCTL_ARGS% fs mkdir --yes "%~1" >NUL
if errorlevel 1 exit /b 1
:made
echo %~1
