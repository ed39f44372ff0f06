#include "ext.h"
#include <opencv2/core.hpp>
#include <opencv2/photo.hpp>

extern "C" int fd_inpaint(const unsigned char* src, const unsigned char* mask, int w, int h,
                          double radius, int method, unsigned char* dst) {
    try {
        cv::Mat s(h, w, CV_8UC3, const_cast<unsigned char*>(src));
        cv::Mat m(h, w, CV_8UC1, const_cast<unsigned char*>(mask));
        cv::Mat d(h, w, CV_8UC3, dst);
        cv::Mat out;
        cv::inpaint(s, m, out, radius, method == 1 ? cv::INPAINT_NS : cv::INPAINT_TELEA);
        out.copyTo(d);
        return 0;
    } catch (...) {
        return -1;
    }
}
