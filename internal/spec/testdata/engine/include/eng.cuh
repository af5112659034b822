// The engine's header (a test fixture).
#pragma once
