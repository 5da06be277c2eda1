@echo off
rem csi-sanity's path creation command under Wine: makes the folder on the
rem host the plugin talks to, through csiproxyctl, and prints it.
"%CSIPROXYCTL%" %CSIPROXYCTL_ARGS% fs mkdir --yes "%~1" >NUL || exit /b 1
echo %~1
