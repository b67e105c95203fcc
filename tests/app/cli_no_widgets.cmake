# cmake -DCLI=path/to/edgetrain-cli -P cli_no_widgets.cmake
# edgetrain-cli draws the study's charts and PDF with Qt Gui alone (app/report): neither it nor a
# library it loads may pull in Qt Widgets. ldd lists the libraries the loader would map.
execute_process(COMMAND ldd "${CLI}" OUTPUT_VARIABLE libraries ERROR_VARIABLE problem
  RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "ldd ${CLI} failed (${status}): ${problem}")
endif()
# The check means something only if ldd listed Qt at all.
foreach(needed libQt6Core libQt6Gui)
  if(NOT libraries MATCHES "${needed}")
    message(FATAL_ERROR "ldd does not list ${needed} for ${CLI}:\n${libraries}")
  endif()
endforeach()
if(libraries MATCHES "libQt6(Widgets|Charts|OpenGLWidgets|SvgWidgets)[^ ]*")
  message(FATAL_ERROR "edgetrain-cli links ${CMAKE_MATCH_0}:\n${libraries}")
endif()
message(STATUS "edgetrain-cli loads Qt Core and Gui, no Qt Widgets")
